"""The fuzzers of tests/fuzz run for a fixed time on every test run (issue 22: "so the next
hostile file is found here"; docs/testing.md):
- the Python readers (analysis.results.io, the fleet's load_cases_run) under hypothesis;
- every command that reads result files (report, paper, compare, fleet, fleet-history
  append) on valid files with hostile attributes (fuzz_attributes.py, issue 33), its time
  its imports included;
- the C++ result reader and snapshot loader under a seeded mutation loop: in the test
  command the plain build's `build/fuzz/mempath_fuzz` (nothing more to build); in CI's own
  pass (`ci`) also built with AddressSanitizer and UBSan in a build folder of its own
  (build-fuzz), which takes a minute of two cores.

The seed is MEMPATH_FUZZ_SEED, else the day's date (printed: a failure reproduces with it);
MEMPATH_FUZZ_SECONDS is each fuzzer's time (default 10 s, 30 s in CI's pass). Nothing here
skips: hypothesis is imported (a missing one fails collection) and a build failure fails
the test. The reproducers of earlier failures (tests/fuzz/crashes) are replayed, except
those listed in tests/fuzz/known.txt.
"""
from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

import hypothesis  # noqa: F401  - the Python fuzzer needs it: a missing one fails here, loudly
import pytest

from conftest import CI_TIER, REPO

FUZZ = REPO / "tests" / "fuzz"
SECONDS = float(os.environ.get("MEMPATH_FUZZ_SECONDS") or (30 if CI_TIER else 10))
SEED = int(os.environ.get("MEMPATH_FUZZ_SEED") or datetime.date.today().strftime("%Y%m%d"))
#: Snapshots of the fixtures that seed the snapshot fuzzer beside its own corpus (the larger
#: GH200 ones cost more to copy per input than they add).
SNAPSHOT_SEEDS = ["x86_h100", "gh200_single", "gh200_single_hbm_offline", "x86_2s_4gpu", "h100_loan_saved"]


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    print(proc.stdout[-20000:], proc.stderr[-5000:], sep="\n")  # pytest shows it on failure
    return proc


def _asan_fuzzer(tmp: Path) -> Path:
    """mempath_fuzz_asan, configured and built in build-fuzz (only its own sources)."""
    build = REPO / "build-fuzz"
    configure = ["cmake", "-S", str(REPO / "src"), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 "-DMEMPATH_WITH_CUDA=OFF", "-DMEMPATH_WITH_MPI=OFF", "-DMEMPATH_TESTS=OFF", "-DMEMPATH_FUZZ=ON"]
    proc = _run(configure, 600)
    assert proc.returncode == 0, f"configuring the fuzzer failed:\n{proc.stderr[-3000:]}"
    proc = _run(["cmake", "--build", str(build), "--target", "mempath_fuzz_asan", "-j", str(os.cpu_count() or 2)], 900)
    assert proc.returncode == 0, (f"building mempath_fuzz_asan failed (a parser needing another source file: "
                                  f"add it in tests/fuzz/CMakeLists.txt):\n{proc.stdout[-3000:]}")
    return build / "fuzz" / "mempath_fuzz_asan"


def test_python_readers_keep_their_contract_under_fuzzing(tmp_path: Path) -> None:
    proc = _run([sys.executable, str(FUZZ / "fuzz_readers.py"), "--seconds", f"{SECONDS:g}",
                 "--seed", str(SEED), "--crashes", str(tmp_path / "crashes"),
                 "--replay", str(FUZZ / "crashes" / "results"), "--known", str(FUZZ / "known.txt")],
                timeout=SECONDS * 4 + 300)
    assert "fuzz_readers: seed" in proc.stdout, proc.stderr
    assert proc.returncode == 0, f"the Python readers broke their contract (seed {SEED}):\n" + \
        "\n".join(l for l in proc.stdout.splitlines() if l.startswith(("FAIL", "  ")))


def test_every_command_keeps_its_rule_under_hostile_attributes(tmp_path: Path) -> None:
    proc = _run([sys.executable, str(FUZZ / "fuzz_attributes.py"), "--seconds", f"{SECONDS:g}",
                 "--seed", str(SEED), "--crashes", str(tmp_path / "crashes"),
                 "--replay", str(FUZZ / "crashes" / "attributes"), "--known", str(FUZZ / "known.txt")],
                timeout=SECONDS * 4 + 300)
    summary = [l for l in proc.stdout.splitlines() if l.startswith("fuzz_attributes: seed")]
    assert len(summary) == 2, proc.stdout + proc.stderr  # the start and the end
    assert " 0 inputs " not in summary[1], summary[1]
    assert proc.returncode == 0, f"a command broke the rule on hostile attributes (seed {SEED}):\n" + \
        "\n".join(l for l in proc.stdout.splitlines() if l.startswith(("FAIL", "  ")))


def _fuzz_cpp(fuzzer: Path, tmp_path: Path) -> None:
    """Both targets of ``fuzzer`` for SECONDS together; the reproducers replayed."""
    if not fuzzer.is_file():
        pytest.fail(f"{fuzzer} does not exist: build it first (tests/run_tests.sh does)")
    seeds = tmp_path / "fixtures"
    seeds.mkdir()
    for name in SNAPSHOT_SEEDS:
        (seeds / name).symlink_to(REPO / "tests" / "fixtures" / name)
    failed = []
    for target, extra in (("results", []), ("snapshots", ["--corpus", str(seeds)])):
        proc = _run([str(fuzzer), target, "--corpus", str(FUZZ / "corpus" / target), *extra,
                     "--seconds", f"{SECONDS / 2:g}", "--seed", str(SEED), "--timeout-ms", "2000",
                     "--crashes", str(tmp_path / "crashes"), "--replay", str(FUZZ / "crashes"),
                     "--known", str(FUZZ / "known.txt")], timeout=SECONDS * 4 + 300)
        summary = [l for l in proc.stdout.splitlines() if l.startswith(f"mempath_fuzz {target}: seed")]
        assert len(summary) == 2, proc.stdout + proc.stderr  # the start and the end
        assert " 0 runs " not in summary[1], summary[1]
        if proc.returncode != 0:
            failed += [l for l in proc.stdout.splitlines() if l.startswith(("FAIL", "  "))]
    assert not failed, f"the C++ parsers failed (seed {SEED}):\n" + "\n".join(failed)


def test_cpp_result_reader_and_snapshot_loader_survive_fuzzing(mempath_bin: Path, tmp_path: Path) -> None:
    _fuzz_cpp(mempath_bin.parent / "fuzz" / "mempath_fuzz", tmp_path)


@pytest.mark.ci
def test_cpp_parsers_survive_fuzzing_under_the_sanitizers(tmp_path: Path) -> None:
    _fuzz_cpp(_asan_fuzzer(tmp_path), tmp_path)


def test_the_tree_keeps_no_link_and_a_kept_input_neither(mempath_bin: Path, tmp_path: Path) -> None:
    """A link git tracks (a reproducer's meminfo linked to /dev/zero) hangs whatever reads the
    checkout's files (issue 47): the reproducers list their links in .fuzz-special, and the
    fuzzer writes the links of an input it keeps there too, never as links."""
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    links = [line.split("\t", 1)[1] for line in tracked.stdout.splitlines() if line.startswith("120000 ")]
    assert not links, f"git tracks links: {links}"
    assert "link sys/devices/system/node/node0/meminfo /dev/zero" in \
        (FUZZ / "crashes" / "snapshots" / "devzero_meminfo" / ".fuzz-special").read_text()
    grow = tmp_path / "grow"
    proc = _run([str(mempath_bin.parent / "fuzz" / "mempath_fuzz"), "snapshots", "--corpus",
                 str(FUZZ / "corpus" / "snapshots"), "--runs", "300", "--seed", "7", "--timeout-ms", "2000",
                 "--crashes", str(tmp_path / "crashes"), "--grow", str(grow)], timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    kept = [p for p in grow.rglob("*")]
    assert not [p for p in kept if p.is_symlink()], "a kept input holds a link"
    assert any("link " in p.read_text() for p in kept if p.name == ".fuzz-special"), \
        "no kept input of 300 had a link to write down: the test proves nothing (another seed?)"
