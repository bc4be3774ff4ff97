"""`mempath-mpi` and the mpi4py inventory on this machine with `mpirun` (both ranks on one
host: mempath-mpi splits them into two halves that play the two nodes). The same binary
runs across the CI's two Slurm nodes in test_slurm_cluster.py. Skipped where no MPI is
installed."""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import REPO, summaries

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="no mpirun: MPI is not installed")
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_hwloc_base_binding_policy": "none", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def mpirun(*args: str, np_: int = 2, timeout: int = 300, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess:
    return subprocess.run([MPIRUN, "-np", str(np_), *args], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout)


def error_lines(stderr: str) -> list[str]:
    return [l for l in stderr.splitlines() if l.startswith("mempath-mpi: error:")]


def test_bw_uni_and_bi_between_two_halves(mpi_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "bw.h5"
    proc = mpirun(str(mpi_bin), "bw", "--max-size", "1MiB", "--reps", "3", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = summaries(proc.stdout, "mpi_bw")
    assert len(lines) == 2 * 21  # 1 B .. 1 MiB, both modes
    assert all(l["status"] == "ok" and l["pairs"] == "1" for l in lines), lines
    big = {l["mode"]: float(l["median_GBps"]) for l in lines if l["size"] == str(1 << 20)}
    small = {l["mode"]: float(l["median_GBps"]) for l in lines if l["size"] == "1"}
    assert big["uni"] > 10 * small["uni"]  # bandwidth grows with the message size
    with h5py.File(out) as f:
        assert f.attrs["mpi_ranks"] == 2
        assert len(f["mpi_bw/samples/rep"]) == 42 * 3
        assert set(f["mpi_bw/cases/same_host"][()]) == {1}
        assert list(f["mpi_bw/ranks/node"][()]) == [0, 1]
        assert (f["mpi_bw/samples/time_s"][()] > 0).all()


def test_a_launcher_binding_is_kept(mpi_bin: Path, tmp_path: Path) -> None:
    """Without a binding the two halves of one host get a core each; a rank that the
    launcher bound (here taskset, on Slurm srun --cpu-bind) stays where it was put."""
    free, bound = tmp_path / "free.h5", tmp_path / "bound.h5"
    last = str((os.cpu_count() or 1) - 1)
    for out, prefix in ((free, []), (bound, ["taskset", "-c", last])):
        proc = mpirun(*prefix, str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1KiB", "--max-size", "1KiB",
                      "--reps", "1", "--output", str(out))
        assert proc.returncode == 0, proc.stderr
    with h5py.File(free) as f:
        free_cpus = [c.decode() for c in f["mpi_bw/ranks/cpus"][()]]
    with h5py.File(bound) as f:
        bound_cpus = [c.decode() for c in f["mpi_bw/ranks/cpus"][()]]
    assert bound_cpus == [last, last]
    if (os.cpu_count() or 1) > 1:
        assert free_cpus[0] != free_cpus[1]


def test_device_buffers_without_cuda_aware_mpi_are_skipped_with_the_reason(mpi_bin: Path, tmp_path: Path) -> None:
    """Skipped with the reason in the file; when nothing else was asked for, the run is
    bad input: one line, exit 2."""
    out = tmp_path / "d.h5"
    proc = mpirun(str(mpi_bin), "bw", "--alloc", "device", "--max-size", "4B", "--mode", "uni", "--output", str(out))
    lines = summaries(proc.stdout, "mpi_bw")
    assert lines and all(l["status"] == "skipped" for l in lines), proc.stdout + proc.stderr
    assert "CUDA" in lines[0]["reason"] or "GPU" in lines[0]["reason"]
    assert proc.returncode == 2
    errors = [l for l in proc.stderr.splitlines() if l.startswith("mempath-mpi: error:")]
    assert len(errors) == 1 and "no case could run" in errors[0], proc.stderr
    with h5py.File(out) as f:
        assert set(f["mpi_bw/cases/status"].asstr()[()]) == {"skipped"}
    # With a host allocator beside it, the device cases are skipped and the run succeeds.
    both = mpirun(str(mpi_bin), "bw", "--alloc", "numa,device", "--max-size", "4B", "--mode", "uni",
                  "--output", str(tmp_path / "b.h5"))
    assert both.returncode == 0, both.stderr


@pytest.mark.parametrize("args,hint", [(["--ppn", "3"], "ranks per node"),
                                       (["--alloc", "glue"], "valid: numa"),
                                       (["--mode", "sideways"], "valid: uni, bi"),
                                       (["--max-size", "4GiB"], "one MPI message"),
                                       # issue #12: 2^32 + 1 was truncated to 1 repetition
                                       (["--reps", "4294967297"], "from 1 to 1000000"),
                                       (["--reps", "0"], "from 1 to 1000000"),
                                       (["--timeout", "-1"], "valid: a whole number"),
                                       # issue #12: an empty list fell back to the default
                                       (["--mode", ","], "names nothing"),
                                       (["--alloc", ""], "--alloc")])
def test_bw_bad_input_is_one_line_exit_2_and_keeps_results(mpi_bin: Path, tmp_path: Path,
                                                           args: list[str], hint: str) -> None:
    out = tmp_path / "keep.h5"
    assert mpirun(str(mpi_bin), "bw", "--max-size", "1KiB", "--reps", "1", "--output", str(out)).returncode == 0
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    proc = mpirun(str(mpi_bin), "bw", "--output", str(out), *args)
    assert proc.returncode == 2
    errors = [l for l in proc.stderr.splitlines() if l.startswith("mempath-mpi: error:")]
    assert len(errors) == 1 and hint in errors[0], proc.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before


def test_a_case_past_its_timeout_ends_every_rank_and_earlier_cases_stay_valid(mpi_bin: Path, tmp_path: Path) -> None:
    """The watchdog: a case that runs longer than --timeout ends the whole job (no rank
    is left waiting), and the cases written before it are still a valid file."""
    out = tmp_path / "t.h5"
    start = time.monotonic()
    # Up to 512 MiB each case takes well under a second; at 1 GiB a repetition moves
    # 128 GiB, far more than 5 s on any machine.
    proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1MiB", "--max-size", "1GiB", "--reps", "3",
                  "--timeout", "5", "--output", str(out), timeout=120)
    assert proc.returncode != 0
    assert "ran longer than --timeout 5 s" in proc.stderr
    assert time.monotonic() - start < 100
    with h5py.File(out) as f:
        assert len(f["mpi_bw/cases/status"]) >= 1
        assert set(f["mpi_bw/cases/status"].asstr()[()]) == {"ok"}


def test_nccl_without_gpus_is_bad_input(mpi_bin: Path) -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has GPUs")
    proc = mpirun(str(mpi_bin), "nccl")
    assert proc.returncode == 2 and ("needs GPUs" in proc.stderr or "no NCCL" in proc.stderr), proc.stderr


def test_inventory_gathers_every_rank_into_the_run(mpi_bin: Path, mempath_bin: Path, tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    out = tmp_path / "bw.h5"
    assert mpirun(str(mpi_bin), "bw", "--max-size", "1KiB", "--reps", "1", "--output", str(out)).returncode == 0
    proc = mpirun(sys.executable, str(REPO / "slurm" / "inventory.py"), "--output", str(out),
                  "--mempath", str(mempath_bin))
    assert proc.returncode == 0, proc.stderr
    assert "MEMPATH inventory ranks=2" in proc.stdout
    with h5py.File(out) as f:
        inv = f["inventory/ranks"]
        assert list(inv["rank"][()]) == [0, 1]
        assert all(v.startswith("Open MPI") or v.startswith("MPICH") for v in inv["mpi_library"].asstr()[()])
        assert all('"processors"' in t for t in inv["topology_json"].asstr()[()])
        assert "mpi_bw/cases" in f  # the benchmark's tables are untouched


def test_inventory_refuses_a_file_that_is_not_a_mempath_run(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["tool"] = "something-else"
    proc = mpirun(sys.executable, str(REPO / "slurm" / "inventory.py"), "--output", str(other), np_=1)
    assert proc.returncode != 0 and "not a mempath result file" in proc.stderr + proc.stdout


@pytest.mark.parametrize("problem", ["missing folder", "existing file", "locked file"])
def test_a_bad_output_ends_every_rank_at_once_with_exit_2(mpi_bin: Path, tmp_path: Path, problem: str) -> None:
    """Issue #12: only rank 0 opens --output; it used to exit while rank 1 waited forever.
    Now rank 0 tells every rank, all exit 2 within seconds, with one line from rank 0, and an
    existing file is left as it was."""
    out = tmp_path / "r.h5"
    hint = {"missing folder": "does not exist", "existing file": "--overwrite", "locked file": "another mempath run"}
    if problem == "missing folder":
        out = Path("/nonexistent") / "x.h5"
    elif problem == "existing file":
        out.write_bytes(b"keep me")
    lock = None
    if problem == "locked file":
        lock = open(str(out) + ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        start = time.monotonic()
        proc = mpirun(str(mpi_bin), "bw", "--max-size", "1KiB", "--reps", "1", "--output", str(out), timeout=60)
        elapsed = time.monotonic() - start
    finally:
        if lock:
            lock.close()
    assert proc.returncode == 2, proc.stderr
    assert elapsed < 30
    errors = error_lines(proc.stderr)
    assert len(errors) == 1 and hint[problem] in errors[0], proc.stderr
    if problem == "existing file":
        assert out.read_bytes() == b"keep me"
    assert "MEMPATH mpi_bw" not in proc.stdout


def test_overwrite_replaces_an_existing_result_only_after_a_case(mpi_bin: Path, tmp_path: Path) -> None:
    """Issue #12: --overwrite as in single-node commands; and rank 0 no longer saves the
    ranks table before the first case, which would have replaced a good file with an empty
    one (here: a run whose first case never finishes must leave the old file whole)."""
    out = tmp_path / "o.h5"
    args = ["bw", "--mode", "uni", "--max-size", "2B", "--reps", "1", "--output", str(out)]
    assert mpirun(str(mpi_bin), *args).returncode == 0
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    # A 256 MiB case moves 16 GiB in its warm-up alone: far past a 1 s --timeout.
    proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "256MiB", "--max-size", "256MiB",
                  "--timeout", "1", "--output", str(out), "--overwrite", timeout=60)
    assert proc.returncode == 1 and "ran longer than --timeout 1 s" in proc.stderr, proc.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before
    proc = mpirun(str(mpi_bin), *args, "--overwrite", timeout=60)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(out) as f:
        assert len(f["mpi_bw/cases/status"]) == 2
    assert not Path(str(out) + ".lock").exists()


def test_the_received_data_are_checked(mpi_bin: Path, tmp_path: Path) -> None:
    """Issue #12: MPI bw never checked what arrived. The test-only MEMPATH_TEST_CORRUPT_RECV=1
    flips one received byte after each receive: every case must fail with the reason, and
    the run exit 1; without it every case is verified."""
    good, bad = tmp_path / "good.h5", tmp_path / "bad.h5"
    args = ["bw", "--max-size", "64KiB", "--min-size", "1KiB", "--reps", "2"]
    proc = mpirun(str(mpi_bin), *args, "--output", str(good), timeout=120)
    assert proc.returncode == 0, proc.stderr
    with h5py.File(good) as f:
        assert set(f["mpi_bw/cases/verified"][()]) == {1}
    proc = mpirun(str(mpi_bin), *args, "--output", str(bad), timeout=120, env={"MEMPATH_TEST_CORRUPT_RECV": "1"})
    assert proc.returncode == 1, proc.stderr
    lines = summaries(proc.stdout, "mpi_bw")
    assert lines and all(l["status"] == "failed" for l in lines), proc.stdout
    assert "received data differ" in lines[0]["reason"]
    with h5py.File(bad) as f:
        assert set(f["mpi_bw/cases/status"].asstr()[()]) == {"failed"}
        assert set(f["mpi_bw/cases/verified"][()]) == {0}
        assert all("received data differ" in r for r in f["mpi_bw/cases/reason"].asstr()[()])


def test_without_thread_multiple_a_stuck_case_still_ends_every_rank(mpi_bin: Path, tmp_path: Path) -> None:
    """Issue #12: the watchdog thread may call MPI_Abort only under MPI_THREAD_MULTIPLE.
    With less (forced here by the test-only MEMPATH_TEST_MPI_THREAD=funneled) the run says
    so once, and each rank's own watchdog ends it: no rank is left waiting."""
    out = tmp_path / "f.h5"
    start = time.monotonic()
    proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1MiB", "--max-size", "1GiB", "--reps", "3",
                  "--timeout", "5", "--output", str(out), timeout=120, env={"MEMPATH_TEST_MPI_THREAD": "funneled"})
    assert proc.returncode == 1, proc.stderr
    assert time.monotonic() - start < 100
    assert proc.stderr.count("not MPI_THREAD_MULTIPLE") == 1, proc.stderr
    assert "ran longer than --timeout 5 s" in proc.stderr and "ending this rank" in proc.stderr
    with h5py.File(out) as f:
        assert set(f["mpi_bw/cases/status"].asstr()[()]) == {"ok"}


def gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    return len(subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.splitlines())


@pytest.mark.gpu
def test_nccl_checks_every_element_of_every_result(mpi_bin: Path, tmp_path: Path) -> None:
    """Issue #12: the NCCL check read element 0 only, of an output never cleared between
    sizes. Now the output is cleared before the timed collectives and every element is
    checked (one rank per GPU, up to two)."""
    ranks = min(2, gpu_count())
    if ranks == 0:
        pytest.skip("no GPU")
    out = tmp_path / "n.h5"
    proc = mpirun(str(mpi_bin), "nccl", "--min-size", "4KiB", "--max-size", "4MiB", "--iters", "3", "--warmup", "1",
                  "--output", str(out), np_=ranks, timeout=300)
    if "no NCCL" in proc.stderr:
        pytest.skip("this mempath-mpi was built without NCCL")
    assert proc.returncode == 0, proc.stderr
    lines = summaries(proc.stdout, "nccl")
    assert len(lines) == 2 * 11 and all(l["status"] == "ok" for l in lines), proc.stdout
    with h5py.File(out) as f:
        assert set(f["nccl/cases/verified"][()]) == {1}
    assert mpirun(str(mpi_bin), "nccl", "--max-size", "4KiB", "--output", str(out), np_=ranks).returncode == 2
