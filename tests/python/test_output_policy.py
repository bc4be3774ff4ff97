"""Never lose a result (issue 12): the output policy of every result-writing command, one
run per file, kills, full disks, stuck cases and sweeps cut short. Each test failed before
the policy existed (an existing --output was replaced by an empty file before the first case,
two runs clashed in HDF5's locks, a full disk crashed HDF5's exit handler, a kill left
PATH.tmp, sweeps were saved only at their end, and no case had a time limit)."""
from __future__ import annotations

import hashlib
import re
import resource
import signal
import subprocess
import time
from pathlib import Path

import h5py
import pytest

from conftest import run

# A chase whose first case (4 KiB) ends at once and whose second (1 GiB, 10^8 dependent
# loads per repetition, ~100 ns each) runs for tens of seconds: a run to cut short.
LONG_SECOND_CASE = ["chase", "--pu", "cpu0", "--size", "4KiB,1GiB", "--accesses", "100000000", "--reps", "1"]
QUICK = ["chase", "--pu", "cpu0", "--size", "4KiB", "--accesses", "200000", "--reps", "2"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def statuses(path: Path, group: str = "chase") -> list[str]:
    with h5py.File(path) as f:
        return [s.decode() for s in f[f"{group}/cases/status"][()]]


def one_error_line(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def start(binary: Path, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([str(binary), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def wait_for_first_case(proc: subprocess.Popen, out: Path, group: str = "chase", timeout: float = 120) -> None:
    """Until the first case is saved."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if out.exists() and statuses(out, group):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the first case was not saved in time")


def test_an_existing_output_is_refused_and_left_as_it_was(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.h5"
    run(mempath_cpu_bin, *QUICK, "--output", str(out))
    before = digest(out)
    line = one_error_line(run(mempath_cpu_bin, *QUICK, "--output", str(out), check_rc=None))
    assert "exists" in line and "--overwrite" in line
    assert digest(out) == before


@pytest.mark.parametrize("bad_args", [["--reps", "0"], ["--accesses", "0"], ["--pu", "cpu99"]])
def test_overwrite_with_bad_input_keeps_the_old_file(mempath_cpu_bin: Path, tmp_path: Path,
                                                     bad_args: list[str]) -> None:
    out = tmp_path / "run.h5"
    run(mempath_cpu_bin, *QUICK, "--output", str(out))
    before = digest(out)
    one_error_line(run(mempath_cpu_bin, "chase", "--pu", "cpu0", "--size", "4KiB", *bad_args,
                       "--output", str(out), "--overwrite", check_rc=None))
    assert digest(out) == before


def test_overwrite_replaces_only_once_a_case_has_finished(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """Killed before its first case ends, an --overwrite run leaves the old file whole."""
    out = tmp_path / "run.h5"
    run(mempath_cpu_bin, *QUICK, "--output", str(out))
    before = digest(out)
    proc = start(mempath_cpu_bin, "chase", "--pu", "cpu0", "--size", "1GiB", "--accesses", "100000000",
                 "--output", str(out), "--overwrite")
    time.sleep(1.5)
    proc.kill()
    proc.wait()
    assert digest(out) == before
    assert statuses(out) == ["ok"]


@pytest.mark.parametrize("kind", ["text", "symlink", "folder", "readonly"])
def test_outputs_that_are_not_result_files_are_refused_even_with_overwrite(
        mempath_cpu_bin: Path, tmp_path: Path, kind: str) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("a user's file\n")
    out = {"text": target, "symlink": tmp_path / "link.h5", "folder": tmp_path, "readonly": tmp_path / "ro.h5"}[kind]
    if kind == "symlink":
        out.symlink_to(target)
    if kind == "readonly":
        run(mempath_cpu_bin, *QUICK, "--output", str(out))
        out.chmod(0o444)  # refused by its mode bits, so for root too (access(2) would let root write)
        before = digest(out)
    line = one_error_line(run(mempath_cpu_bin, *QUICK, "--output", str(out), "--overwrite", check_rc=None))
    assert "--output" in line
    assert target.read_text() == "a user's file\n"
    if kind == "readonly":
        assert "is read-only; give another name" in line
        assert digest(out) == before


def test_a_second_run_on_the_same_output_is_refused_before_any_work(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.h5"
    first = start(mempath_cpu_bin, *LONG_SECOND_CASE, "--output", str(out))
    try:
        wait_for_first_case(first, out)
        t0 = time.monotonic()
        line = one_error_line(run(mempath_cpu_bin, *QUICK, "--output", str(out), "--overwrite", check_rc=None))
        assert time.monotonic() - t0 < 10
        assert "another mempath run" in line and f"pid {first.pid}" in line
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    # SIGTERM: the finished case stays, nothing half-written or locked is left.
    assert statuses(out) == ["ok"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]


def test_default_names_of_runs_started_together_differ(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    procs = [start(mempath_cpu_bin, *QUICK, cwd=tmp_path) for _ in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.communicate()
    assert len(list(tmp_path.glob("mempath-chase-*.h5"))) == 3


def test_a_killed_run_leaves_the_finished_cases_and_the_next_run_cleans_up(
        mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.h5"
    proc = start(mempath_cpu_bin, *LONG_SECOND_CASE, "--output", str(out))
    wait_for_first_case(proc, out)
    proc.kill()
    proc.wait()
    assert statuses(out) == ["ok"]
    (tmp_path / "run.h5.tmp").write_bytes(b"half a save")  # as a kill inside save() leaves it
    run(mempath_cpu_bin, *QUICK, "--output", str(out), "--overwrite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]
    assert statuses(out) == ["ok"]


def test_a_case_longer_than_timeout_ends_the_run_with_the_finished_cases(mempath_cpu_bin: Path,
                                                                        tmp_path: Path) -> None:
    out = tmp_path / "run.h5"
    t0 = time.monotonic()
    proc = run(mempath_cpu_bin, *LONG_SECOND_CASE, "--timeout", "3", "--output", str(out), check_rc=None)
    assert time.monotonic() - t0 < 30
    line = one_error_line(proc, code=1)
    assert re.search(r"case 1 \(cpu0 (LP)?DDR latency\)", line) and "ran longer than --timeout 3 s" in line
    assert statuses(out) == ["ok"]
    with h5py.File(out) as f:
        assert "ran longer than --timeout 3 s" in f.attrs["aborted"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]


def _limit_file_size(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_write_error_is_one_line_and_keeps_what_was_saved(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """A file-size limit makes the first save fail: one line, exit 1, no PATH.tmp, no core dump."""
    out = tmp_path / "run.h5"
    proc = subprocess.run([str(mempath_cpu_bin), *QUICK, "--output", str(out)], capture_output=True, text=True,
                          timeout=120, preexec_fn=_limit_file_size(4096))
    line = one_error_line(proc, code=1)
    assert "cannot write" in line and "nothing was written" in line
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_full_disk_keeps_the_cases_saved_before(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        out = disk / "run.h5"
        # Every size adds samples; the file and its next version stop fitting in 96 KiB. (200
        # sizes that differ: a size given twice is measured once.)
        proc = run(mempath_cpu_bin, "chase", "--pu", "cpu0", "--size", ",".join(str(4096 + 64 * i) for i in range(200)),
                   "--accesses", "200000", "--reps", "20", "--output", str(out), check_rc=None)
        line = one_error_line(proc, code=1)
        assert "No space left on device" in line and "keeps the cases finished before" in line
        done = statuses(out)
        assert 0 < len(done) < 200 and set(done) == {"ok"}
        assert sorted(p.name for p in disk.iterdir()) == ["run.h5"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_stream_sweep_is_saved_case_by_case(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """Killed after its first thread count, a sweep keeps that case (it was saved only at the
    sweep's end); run whole, every row learns the sweep's best thread count."""
    out = tmp_path / "cut.h5"
    # --in-cache: what is tested is the saving, not cache residency; a VM reporting a 480 MiB
    # last-level cache refuses 512 MiB arrays without it (issue 33).
    sweep = ["stream", "--pu", "cpu0", "--threads", "sweep", "--size", "512MiB", "--in-cache", "--reps", "5"]
    proc = start(mempath_cpu_bin, *sweep, "--output", str(out))
    wait_for_first_case(proc, out, "stream")
    proc.kill()
    proc.wait()
    with h5py.File(out) as f:
        assert set(f["stream/cases/threads"][()]) == {1}
        assert set(f["stream/cases/best_threads"][()]) == {-1}  # the sweep never ended

    whole = tmp_path / "whole.h5"
    run(mempath_cpu_bin, "stream", "--pu", "cpu0", "--threads", "sweep", "--size", "64MiB", "--in-cache",
        "--reps", "2", "--output", str(whole))
    with h5py.File(whole) as f:
        threads = set(f["stream/cases/threads"][()])
        best = set(f["stream/cases/best_threads"][()])
    assert len(threads) >= 2 and len(best) == 1 and best <= threads


@pytest.mark.gpu
def test_a_memcpy_sweep_row_gets_the_sweeps_saturation_size(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep.h5"
    run(mempath_bin, "memcpy", "--sweep", "--max-size", "64MiB", "--direction", "h2d", "--engine", "ce",
        "--reps", "3", "--output", str(out))
    with h5py.File(out) as f:
        saturation = set(f["memcpy/cases/saturation_bytes"][()])
        sizes = set(f["memcpy/cases/size_bytes"][()])
    assert len(sizes) > 5 and len(saturation) == 1 and saturation <= sizes
