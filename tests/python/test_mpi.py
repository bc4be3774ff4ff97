"""`mempath-mpi` and the mpi4py inventory on this machine with `mpirun` (both ranks on one
host: mempath-mpi splits them into two halves that play the two nodes). The same binary
runs across the CI's two Slurm nodes in test_slurm_cluster.py. Skipped where no MPI is
installed."""
from __future__ import annotations

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

from conftest import REPO
from test_cli_bw import summaries

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="no mpirun: MPI is not installed")
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_hwloc_base_binding_policy": "none", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


@pytest.fixture(scope="module")
def mpi_bin() -> Path:
    path = Path(os.environ.get("MEMPATH_MPI_BIN", REPO / "build" / "mempath-mpi"))
    if not path.exists():
        pytest.fail(f"{path} does not exist although MPI is installed: the build should have made it")
    return path


def mpirun(*args: str, np_: int = 2, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([MPIRUN, "-np", str(np_), *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout)


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
                                       (["--max-size", "4GiB"], "one MPI message")])
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
