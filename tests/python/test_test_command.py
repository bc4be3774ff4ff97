"""The test command and the setup it sources (issue 12, "never lose a result"; issue 19,
compute nodes without internet):
tests/run_tests.sh must fail when ctest or pytest fails, and sourcing
site_configs/setup_env.sh must leave the caller's shell options and working directory
alone (its trailing `set +e` and `cd` once made run_tests.sh exit 0 after a failed ctest).

The real scripts run in a copy of the repository's layout whose build and Python tools are
stand-ins (building here would take minutes): `cmake`, `ctest` and the venv's `python`
are small scripts whose exit status the test chooses.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository layout with the real setup_env.sh and run_tests.sh, a ready venv (its
    requirements stamp matches) and stand-ins on PATH that exit with $CMAKE_RC, $CTEST_RC,
    $PYTEST_RC."""
    root = tmp_path / "repo"
    for rel in ("site_configs/setup_env.sh", "tests/run_tests.sh", "requirements.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    (root / ".venv").mkdir()
    shutil.copy2(REPO / "requirements.txt", root / ".venv" / ".requirements")
    for name in ("python", "python3"):
        executable(root / ".venv" / "bin" / name, 'echo "python $*" >> "$CALLS"; exit "${PYTEST_RC:-0}"\n')
    executable(tmp_path / "bin" / "cmake", 'echo "cmake $*" >> "$CALLS"; exit "${CMAKE_RC:-0}"\n')
    executable(tmp_path / "bin" / "ctest", 'echo "ctest $*" >> "$CALLS"; exit "${CTEST_RC:-0}"\n')
    return root


def run(tree: Path, script: str, **rcs: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMPATH_NO_APT": "1", "CALLS": str(tree.parent / "calls"),
           "PATH": f"{tree.parent / 'bin'}:{os.environ['PATH']}",
           **{k.upper(): str(v) for k, v in rcs.items()}}
    env.pop("MEMPATH_BUILD_DIR", None)
    env.pop("MEMPATH_CMAKE_ARGS", None)
    return subprocess.run(["bash", "-c", script], cwd=tree.parent, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("ctest_rc, pytest_rc, expected", [(0, 0, 0), (1, 0, 1), (0, 1, 1), (8, 2, 2)])
def test_run_tests_fails_when_ctest_or_pytest_fails(tree: Path, ctest_rc: int, pytest_rc: int,
                                                    expected: int) -> None:
    out = run(tree, f"{tree}/tests/run_tests.sh -q", ctest_rc=ctest_rc, pytest_rc=pytest_rc)
    assert out.returncode == expected, out.stdout + out.stderr
    calls = (tree.parent / "calls").read_text()
    # Both ran (pytest also after a ctest failure), from the repository root.
    assert "ctest --test-dir build --output-on-failure" in calls
    # The stand-in python answers `import xdist` with PYTEST_RC too: parallel only where it "has" it.
    parallel = "-n [0-9]+ --dist loadfile " if pytest_rc == 0 else ""
    assert re.search(rf"^python -m pytest {parallel}tests/python -q$", calls, re.M), calls
    if ctest_rc:
        assert f"ctest failed (exit {ctest_rc})" in out.stderr


def test_run_tests_fails_when_the_build_fails(tree: Path) -> None:
    out = run(tree, f"{tree}/tests/run_tests.sh", cmake_rc=1)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "setup failed in mempath_build" in out.stderr
    assert "ctest" not in (tree.parent / "calls").read_text()


SHOW = 'echo "opts=$- $(shopt -po pipefail) pwd=$PWD"'


@pytest.mark.parametrize("options", ["set -euo pipefail", "set +e +u +o pipefail", "set -e"])
def test_sourcing_keeps_the_callers_options_and_folder(tree: Path, options: str) -> None:
    before = run(tree, f"{options}; cd /; {SHOW}").stdout
    after = run(tree, f"{options}; cd /; source {tree}/site_configs/setup_env.sh; {SHOW}")
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip().splitlines()[-1] == before.strip(), after.stdout
    assert f"{tree}/.venv/bin" in run(tree, f"source {tree}/site_configs/setup_env.sh; echo $PATH").stdout


def test_a_failed_setup_stops_a_set_e_caller_and_spares_others(tree: Path) -> None:
    stopped = run(tree, f"set -e; source {tree}/site_configs/setup_env.sh; echo went-on", cmake_rc=1)
    assert stopped.returncode == 1 and "went-on" not in stopped.stdout
    assert "setup failed in mempath_build" in stopped.stderr
    # Without errexit the caller decides: sourcing returns 1 and errexit stays off.
    kept = run(tree, f"source {tree}/site_configs/setup_env.sh; echo rc=$?; false; echo went-on",
               cmake_rc=1)
    assert "rc=1" in kept.stdout and "went-on" in kept.stdout, kept.stdout + kept.stderr


# ---- compute nodes without internet (issue 19): the environment is prepared elsewhere ----

SETUP = "source {tree}/site_configs/setup_env.sh; echo rc=$?; echo PATH=$PATH"


def calls_of(tree: Path) -> str:
    path = tree.parent / "calls"
    return path.read_text() if path.exists() else ""


def test_no_pip_uses_the_prepared_environment_even_with_a_stale_stamp(tree: Path) -> None:
    (tree / ".venv" / ".requirements").write_text("an older lock file\n")
    out = run(tree, SETUP.format(tree=tree), mempath_no_pip=1)
    assert "rc=0" in out.stdout, out.stdout + out.stderr
    assert f"{tree}/.venv/bin" in out.stdout
    assert "-m pip" not in calls_of(tree), calls_of(tree)   # only the import check ran


def test_no_pip_names_what_the_environment_lacks_in_one_line(tree: Path) -> None:
    # A venv whose Python finds none of the suite's modules (the check prints them).
    executable(tree / ".venv" / "bin" / "python",
               'echo "python $*" >> "$CALLS"; echo "reframe h5py"; exit 1\n')
    out = run(tree, SETUP.format(tree=tree), mempath_no_pip=1)
    assert "rc=1" in out.stdout, out.stdout + out.stderr
    lines = [l for l in out.stderr.splitlines() if l.startswith("mempath: MEMPATH_NO_PIP=1")]
    assert len(lines) == 1 and "lacks reframe h5py" in lines[0], out.stderr
    assert "-m pip" not in calls_of(tree)


def test_no_pip_without_an_environment_uses_a_python_that_has_the_packages(tree: Path) -> None:
    shutil.rmtree(tree / ".venv")
    executable(tree.parent / "site" / "python3", 'echo "site-python $*" >> "$CALLS"; exit 0\n')
    out = run(tree, SETUP.format(tree=tree), mempath_no_pip=1,
              mempath_python=str(tree.parent / "site" / "python3"))
    assert "rc=0" in out.stdout, out.stdout + out.stderr
    assert f":{tree.parent / 'site'}:" in out.stdout  # after the build folder
    assert "-m venv" not in calls_of(tree) and "-m pip" not in calls_of(tree)


def test_a_wheelhouse_installs_without_an_index(tree: Path) -> None:
    (tree / ".venv" / ".requirements").write_text("an older lock file\n")
    out = run(tree, SETUP.format(tree=tree), mempath_wheelhouse=str(tree.parent / "wheels"))
    assert "rc=0" in out.stdout, out.stdout + out.stderr
    pip = [l for l in calls_of(tree).splitlines() if "-m pip" in l]
    assert pip == [f"python -m pip install -q --no-index --find-links {tree.parent / 'wheels'} "
                   f"-r {tree}/requirements.txt"], pip


def test_a_python_older_than_311_is_refused_in_one_line(tree: Path) -> None:
    shutil.rmtree(tree / ".venv")
    executable(tree.parent / "old" / "python3", 'echo "Python 3.10.12"; exit 1\n')
    out = run(tree, SETUP.format(tree=tree), mempath_python=str(tree.parent / "old" / "python3"))
    assert "rc=1" in out.stdout, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("mempath: Python 3.11 or newer is needed ("), lines
    assert "Python 3.10.12" in lines[0] and "setup failed in mempath_python_env" in lines[1]


def test_files_needing_an_optional_package_skip_where_it_is_absent() -> None:
    """A Python without duckdb (a lent GPU node's) skips the history tests: no collection
    error, which would fail the whole run there."""
    import subprocess
    import sys
    code = ("import sys, pytest; sys.modules['duckdb'] = None; "
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', "
            "'tests/python/test_nightly_baseline.py', 'tests/python/test_fleet_history.py']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    # 5: every test of the two files skipped at collection (pytest's "none collected")
    assert out.returncode == 5 and "2 skipped" in out.stdout and "error" not in out.stdout, out.stdout[-2000:]


INNER = """
import json, os, subprocess
import h5py

def test_on_an_unlike_host(mempath_cpu_bin, tmp_path):
    assert len(os.sched_getaffinity(0)) == 1
    topo = json.loads(subprocess.run([str(mempath_cpu_bin), "topo", "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    cpu0 = next(p for p in topo["processors"] if p["name"] == "cpu0")
    assert cpu0["cache_bytes"] % (480 << 20) == 0 < cpu0["cache_bytes"]
    out = tmp_path / "bw.h5"
    subprocess.run([str(mempath_cpu_bin), "bw", "--pu", "cpu0", "--mem", "numa0", "--size", "8MiB", "--in-cache",
                    "--threads", "1", "--reps", "1", "--output", str(out)], check=True, capture_output=True)
    with h5py.File(out) as f:
        assert f.attrs["nvml"].startswith("NVML 13.580.159.04")
        assert json.loads(f.attrs["host_conditions"])["cpufreq_driver"] == "acpi-cpufreq"

def test_not_running_a_binary():
    pass
"""


def test_the_tests_run_as_on_an_unlike_host(tmp_path: Path) -> None:
    """A VM whose CPU reports a 480 MiB last-level cache refused the buffers of tests written
    for small caches (issues 33, 47). MEMPATH_UNLIKE_HOST=1 makes this host such a host and
    more (conftest.py): the binary sees the cache (and its guard refuses what such a cache
    could hold), an NVML and a cpufreq tree; the test runs on one CPU; `-m binary` selects
    the tests that run a binary."""
    import json
    import sys
    binary = Path(os.environ.get("MEMPATH_CPU_ONLY_BIN", REPO / "build-cpu" / "mempath"))
    if not binary.exists():
        pytest.fail(f"{binary} does not exist: build it first (tests/run_tests.sh does)")
    env = {**os.environ, "MEMPATH_FAKE_LLC_BYTES": "480MiB"}
    refused = subprocess.run([str(binary), "stream", "--pu", "cpu0", "--size", "512MiB", "--reps", "1", "--output",
                              str(tmp_path / "refused.h5")], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--in-cache" in refused.stderr, refused.stderr
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("MEMPATH_FAKE", "MEMPATH_NVML",
                                                                        "MEMPATH_SYSFS"))},
           "MEMPATH_UNLIKE_HOST": "1", "PYTHONPATH": str(REPO / "tests" / "python")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-m", "binary", "-rA", "--basetemp", str(tmp_path / "inner"), str(tmp_path / "test_inner.py")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "1 passed, 1 deselected" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
    assert "mempath: as an unlike host (MEMPATH_UNLIKE_HOST=1)" in out.stdout


def test_a_reframe_module_without_its_command_is_used_through_run_reframe(tmp_path: Path) -> None:
    """Issue 38, item 5: ReFrame installed with `pip --target` (its module on PYTHONPATH, no
    `reframe` on PATH) is run through site_configs/run_reframe.py, said in one line; with
    neither, MEMPATH_REFRAME stays unset and run_suite.sh names it."""
    import sys
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "python3", f'exec "{sys.executable}" "$@"\n')  # its reframe has no command here
    func = subprocess.run(["sed", "-n", "/^mempath_reframe()/,/^}/p", str(REPO / "site_configs" / "setup_env.sh")],
                          capture_output=True, text=True, check=True).stdout
    script = f"mempath_root={REPO}; {func}\nmempath_reframe; echo \"[$MEMPATH_REFRAME]\"; $MEMPATH_REFRAME --version"
    out = subprocess.run(["bash", "-c", script], env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=60)
    assert f"[python3 {REPO}/site_configs/run_reframe.py]" in out.stdout, out.stdout + out.stderr
    assert re.search(r"^4\.\d+\.\d+", out.stdout.splitlines()[-1]), out.stdout
    assert "no reframe command on PATH" in out.stderr
    (bin_dir / "python3").unlink()
    (bin_dir / "python3").symlink_to("/bin/false")
    none = subprocess.run(["bash", "-c", f"mempath_root={REPO}; {func}\nmempath_reframe; echo \"[${{MEMPATH_REFRAME:-}}]\""],
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert none.stdout.strip() == "[]" and none.returncode == 0
