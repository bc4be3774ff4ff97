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


def mpirun(*args: str, np_: int = 2, timeout: int = 300, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([MPIRUN, "-np", str(np_), *args], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout, cwd=cwd)


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
        assert (f.attrs["mpi_ranks"], f.attrs["mpi_machines"]) == (2, 1)
        assert len(f["mpi_bw/samples/rep"]) == 42 * 3
        assert set(f["mpi_bw/cases/same_host"][()]) == {1}
        assert list(f["mpi_bw/ranks/node"][()]) == [0, 1]
        assert (f["mpi_bw/samples/time_s"][()] > 0).all()
        # One machine: the writer's readings are the whole job's, a window a case (issue 40).
        assert sorted(f["conditions/windows/case_id"][()]) == list(range(42))
        assert len(f["conditions/readings/reading"][()]) >= 2


def test_a_job_across_machines_records_each_machines_conditions(mpi_bin: Path, tmp_path: Path) -> None:
    """Two machines (rank 1's procfs below a root of its own, with another boot id): each
    machine's lowest rank reads its conditions, rank 1's reach the writer at the end
    (`machine_conditions`), a window a case on each; the report shows both machines."""
    from analysis.__main__ import main
    from analysis.results import conditions as recorded
    from analysis.results.io import load_run

    root = tmp_path / "other"
    (root / "proc/sys/kernel/random").mkdir(parents=True)
    (root / "proc/sys/kernel/random/boot_id").write_text("0f0e0d0c-0000-4000-8000-000000000002\n")
    (root / "proc/loadavg").write_text("0.50 0.40 0.30 2/300 99\n")
    out = tmp_path / "bw.h5"
    args = [str(mpi_bin), "bw", "--max-size", "4KiB", "--reps", "2", "--output", str(out)]
    proc = subprocess.run([MPIRUN, "-np", "1", *args, ":", "-np", "1", "env", f"MEMPATH_SYSFS_ROOT={root}", *args],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    run_ = load_run(out)
    assert run_.attrs["mpi_machines"] == 2
    own = recorded.of_tables(run_.attrs, run_.tables, run_.topology)
    others = recorded.machines(run_.attrs)
    cases = set(run_.tables["mpi_bw/cases"]["case_id"])
    assert set(own.windows) == cases and list(others) == [run_.attrs["host"]]
    other = others[run_.attrs["host"]]
    assert set(other.windows) == cases and len(other.readings) >= 2
    assert [r["load1"] for r in other.readings.values()] == [0.5] * len(other.readings)  # its own root's
    assert main(["report", str(out), "-o", str(tmp_path / "rep")]) == 0
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert f"### Conditions on `{run_.attrs['host']}` (the other machine of the job `" in summary


def test_split_divides_each_node_size_among_its_ranks(mpi_bin: Path, tmp_path: Path) -> None:
    """The paper's Fig. 14: with --split the sizes are the node's, each of its ranks sends an
    equal share, and the bandwidth is the node's bytes over the node's time."""
    out = tmp_path / "split.h5"
    proc = mpirun(str(mpi_bin), "bw", "--split", "--mode", "uni,bi", "--min-size", "1KiB", "--max-size", "64KiB",
                  "--reps", "2", "--output", str(out), np_=4)
    assert proc.returncode == 0, proc.stderr
    lines = summaries(proc.stdout, "mpi_bw")
    assert len(lines) == 2 * 7 and all(l["status"] == "ok" and l["split"] == "1" for l in lines), proc.stdout
    assert all(l["pairs"] == "2" and int(l["node_size"]) == 2 * int(l["size"]) for l in lines)
    assert sorted({int(l["node_size"]) for l in lines}) == [1 << k for k in range(10, 17)]
    with h5py.File(out) as f:
        cases, samples = f["mpi_bw/cases"], f["mpi_bw/samples"]
        assert set(cases["split"][()]) == {1} and set(cases["ppn"][()]) == {2}
        assert (cases["node_bytes"][()] == 2 * cases["size_bytes"][()]).all()
        windows = cases["windows"][()][samples["case_id"][()]]
        dirs = np.where(samples["mode"].asstr()[()] == "bi", 2, 1)
        assert (samples["bytes"][()] == samples["node_bytes"][()] * 64 * windows * dirs).all()
        assert np.allclose(samples["bandwidth_GBps"][()], samples["bytes"][()] / samples["time_s"][()] / 1e9)
    # Without --split each rank sends the whole size: the node moves twice as much.
    proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1KiB", "--max-size", "1KiB", "--reps", "1",
                  "--output", str(tmp_path / "whole.h5"), np_=4)
    line = summaries(proc.stdout, "mpi_bw")[0]
    assert (line["split"], line["size"], line["node_size"]) == ("0", "1024", "2048"), proc.stdout


@pytest.mark.parametrize("np_,args,hint", [
    (4, ["--split", "--max-size", "1"], "leaves less than 1 B for each of the node's 2 ranks"),
    (2, ["--split", "--max-size", "4GiB"], "exceeds one MPI message"),
    (4, ["--split", "--max-size", "5GiB"], "valid: at most 4294967294 B")])
def test_split_sizes_that_cannot_be_split_are_bad_input(mpi_bin: Path, tmp_path: Path, np_: int,
                                                        args: list[str], hint: str) -> None:
    proc = mpirun(str(mpi_bin), "bw", *args, "--output", str(tmp_path / "s.h5"), np_=np_)
    errors = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(errors) == 1 and hint in errors[0], proc.stderr
    assert not (tmp_path / "s.h5").exists()


def test_an_odd_rank_count_on_one_host_is_refused_not_left_idle(mpi_bin: Path, tmp_path: Path) -> None:
    """Issue 22: 3 ranks on one host made halves of 2 and 1, and one rank sat out every case
    while the file said mpi_ranks=3. bw pairs rank l of one node with rank l of the other."""
    proc = mpirun(str(mpi_bin), "bw", "--max-size", "1KiB", "--reps", "1", "--output", str(tmp_path / "o.h5"),
                  np_=3)
    errors = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(errors) == 1, proc.stdout + proc.stderr
    assert "2 and 1 ranks on its two nodes (3 ranks on one host, split in halves), so 1 would idle" in errors[0]
    assert "an even number on one host" in errors[0] and not (tmp_path / "o.h5").exists()


def test_a_run_states_its_expected_duration_first_and_its_elapsed_time_last(mpi_bin: Path, tmp_path: Path) -> None:
    """The duration model covers mempath-mpi (docs/cli.md, "Expected duration"): rank 0's
    EXPECT line before the first case, ELAPSED after the last; more work, longer expected."""
    def expected(*args: str) -> tuple[dict[str, str], dict[str, str], int]:
        proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1KiB", *args,
                      "--output", str(tmp_path / f"e{len(list(tmp_path.iterdir()))}.h5"))
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.splitlines()
        first, last = (dict(w.split("=", 1) for w in line.split()[2:]) for line in (out[0], out[-1]))
        assert out[0].startswith("EXPECT mpi_bw ") and out[-1].startswith("ELAPSED mpi_bw "), proc.stdout
        return first, last, len(summaries(proc.stdout, "mpi_bw"))
    first, last, cases = expected("--max-size", "4KiB", "--reps", "2")
    assert first["cases"] == first["planned"] == last["cases"] == str(cases) == "3" and first["skipped"] == "0"
    assert first["expected_s"] == last["expected_s"] and float(last["elapsed_s"]) > 0
    more, _, _ = expected("--max-size", "4KiB", "--reps", "20")
    assert float(more["expected_s"]) > float(first["expected_s"])
    # Device buffers without a CUDA-aware MPI are known to be skipped: planned, not expected.
    skip, _, _ = expected("--max-size", "4KiB", "--reps", "2", "--alloc", "numa,device")
    assert (skip["cases"], skip["planned"], skip["skipped"]) == ("6", "3", "3")


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


@pytest.fixture(scope="module")
def finished_run(mpi_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run's file, written once for the bad-input cases below (each gets a copy):
    one mpirun fewer per case."""
    out = tmp_path_factory.mktemp("finished") / "keep.h5"
    assert mpirun(str(mpi_bin), "bw", "--max-size", "1KiB", "--reps", "1", "--output", str(out)).returncode == 0
    return out


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
def test_bw_bad_input_is_one_line_exit_2_and_keeps_results(mpi_bin: Path, tmp_path: Path, finished_run: Path,
                                                           args: list[str], hint: str) -> None:
    out = tmp_path / "keep.h5"
    shutil.copyfile(finished_run, out)
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
    # The first case (1 MiB) takes about a tenth of a second; each size after it moves
    # twice the bytes, and at 1 GiB a repetition moves 128 GiB, far more than 2 s on any
    # machine. 2 s, not more: the job runs its cases and then waits out the timeout, both
    # ranks busy on the CPUs the other test workers share.
    proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1MiB", "--max-size", "1GiB", "--reps", "3",
                  "--timeout", "2", "--output", str(out), timeout=120)
    assert proc.returncode != 0
    assert "ran longer than --timeout 2 s" in proc.stderr
    assert time.monotonic() - start < 100
    with h5py.File(out) as f:
        assert len(f["mpi_bw/cases/status"]) >= 1
        assert set(f["mpi_bw/cases/status"].asstr()[()]) == {"ok"}


def test_nccl_without_gpus_is_bad_input(mpi_bin: Path) -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has GPUs")
    proc = mpirun(str(mpi_bin), "nccl")
    assert proc.returncode == 2 and ("needs GPUs" in proc.stderr or "no NCCL" in proc.stderr), proc.stderr


@pytest.mark.parametrize("args,hint", [
    (["--size-per-rank", "6"], "valid: a positive multiple of 4 B"),
    (["--size-per-rank", "1MiB", "--max-size", "4MiB"], "valid: one of them"),
    (["--paper-sizes", "--size-per-rank", "1MiB"], "valid: one of them"),
    (["--placement", "device,remote"], "valid: device, hbm-system, host, peer, peer-host")])
def test_nccl_bad_sizes_and_placements_are_one_line_exit_2(mpi_bin: Path, args: list[str], hint: str) -> None:
    """Options are checked on every rank before the GPUs are looked at (here: none)."""
    proc = mpirun(str(mpi_bin), "nccl", *args)
    if "no NCCL" in proc.stderr:
        pytest.skip("this mempath-mpi was built without NCCL")
    errors = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(errors) == 1 and hint in errors[0], proc.stderr


def test_inventory_gathers_every_rank_into_the_run(mpi_bin: Path, mempath_bin: Path, tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    out = tmp_path / "bw.h5"
    assert mpirun(str(mpi_bin), "bw", "--max-size", "1KiB", "--reps", "1", "--output", str(out)).returncode == 0
    # As docs/cli.md and MempathInventory run it: a module, from the repository root.
    proc = mpirun(sys.executable, "-m", "slurm.inventory", "--output", str(out), "--mempath", str(mempath_bin),
                  cwd=REPO)
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
    proc = mpirun(sys.executable, "-m", "slurm.inventory", "--output", str(other), np_=1, cwd=REPO)
    assert proc.returncode != 0 and "not a mempath result file" in proc.stderr + proc.stdout


def test_inventory_run_as_a_file_says_how_to_run_it(tmp_path: Path) -> None:
    """Run by its file name, the inventory has its own folder on the path, not the repository
    root with the analysis: one line naming the way that works, exit 2, nothing written."""
    pytest.importorskip("mpi4py")
    out = tmp_path / "inv.h5"
    proc = mpirun(sys.executable, str(REPO / "slurm" / "inventory.py"), "--output", str(out), np_=1, cwd=tmp_path)
    said = [l for l in proc.stderr.splitlines() if l.startswith("inventory:")]
    assert proc.returncode == 2 and len(said) == 1 and "python3 -m slurm.inventory" in said[0], proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


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
    # As above: the first cases end well inside 2 s, a later one runs past it.
    proc = mpirun(str(mpi_bin), "bw", "--mode", "uni", "--min-size", "1MiB", "--max-size", "1GiB", "--reps", "3",
                  "--timeout", "2", "--output", str(out), timeout=120, env={"MEMPATH_TEST_MPI_THREAD": "funneled"})
    assert proc.returncode == 1, proc.stderr
    assert time.monotonic() - start < 100
    assert proc.stderr.count("not MPI_THREAD_MULTIPLE") == 1, proc.stderr
    assert "ran longer than --timeout 2 s" in proc.stderr and "ending this rank" in proc.stderr
    with h5py.File(out) as f:
        assert set(f["mpi_bw/cases/status"].asstr()[()]) == {"ok"}


def gpu_count() -> int:
    """The GPUs a rank can take: nvidia-smi's, fewer where CUDA_VISIBLE_DEVICES hides some."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    count = len(subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.splitlines())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return count if visible is None else min(count, len([v for v in visible.split(",") if v.strip()]))


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


@pytest.mark.gpu
def test_nccl_placements_sizes_per_rank_and_bandwidths(mpi_bin: Path, tmp_path: Path) -> None:
    """Figs. 18/19: every placement runs or is skipped with the reason (GH200-only ones on
    other nodes); --size-per-rank gathers that much from each rank; algbw is the buffer
    over the time (nccl-tests, the paper's bandwidth) and busbw its bus factor, both in the
    table and on the summary line."""
    ranks = min(2, gpu_count())
    if ranks == 0:
        pytest.skip("no GPU")
    out = tmp_path / "p.h5"
    proc = mpirun(str(mpi_bin), "nccl", "--placement", "device,hbm-system,host,peer,peer-host",
                  "--size-per-rank", "1MiB", "--iters", "3", "--warmup", "1", "--output", str(out),
                  np_=ranks, timeout=300)
    if "no NCCL" in proc.stderr:
        pytest.skip("this mempath-mpi was built without NCCL")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("EXPECT nccl cases=10 ") and "ELAPSED nccl cases=10 " in proc.stdout, proc.stdout
    lines = summaries(proc.stdout, "nccl")
    assert len(lines) == 10, proc.stdout
    status = {(l["placement"], l["coll"]): l for l in lines}
    assert status[("device", "allreduce")]["status"] == status[("host", "allgather")]["status"] == "ok"
    for l in lines:
        assert l["status"] in ("ok", "skipped"), l
        assert l["status"] == "ok" or l["reason"], l
        assert int(l["rank_size"]) == 1 << 20
        assert int(l["size"]) == (1 << 20) * (ranks if l["coll"] == "allgather" else 1)
        if l["status"] == "ok":
            assert "algbw_GBps" in l and "busbw_GBps" in l
    with h5py.File(out) as f:
        c = {k: f["nccl/cases"][k][()] for k in ("size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "rank_bytes")}
        ok = f["nccl/cases/status"].asstr()[()] == "ok"
        coll = f["nccl/cases/collective"].asstr()[()]
        mem = f["nccl/cases/mem"].asstr()[()]
    assert np.allclose(c["algbw_GBps"][ok], c["size_bytes"][ok] / (c["time_us"][ok] * 1e-6) / 1e9)
    factor = np.where(coll == "allreduce", 2 * (ranks - 1) / ranks, (ranks - 1) / ranks)
    assert np.allclose(c["busbw_GBps"][ok], c["algbw_GBps"][ok] * factor[ok])
    assert set(mem[ok]) >= {"gpu0"}


@pytest.mark.gpu
def test_nccl_paper_sizes(mpi_bin: Path, tmp_path: Path) -> None:
    """Fig. 19's sizes: all-reduce of 4 GiB, all-gather of 16 MiB from every rank."""
    ranks = min(2, gpu_count())
    if ranks == 0:
        pytest.skip("no GPU")
    proc = mpirun(str(mpi_bin), "nccl", "--paper-sizes", "--iters", "2", "--warmup", "1",
                  "--output", str(tmp_path / "paper.h5"), np_=ranks, timeout=300)
    if "no NCCL" in proc.stderr:
        pytest.skip("this mempath-mpi was built without NCCL")
    assert proc.returncode == 0, proc.stderr
    sizes = {l["coll"]: int(l["size"]) for l in summaries(proc.stdout, "nccl") if l["status"] == "ok"}
    assert sizes == {"allreduce": 4 << 30, "allgather": (16 << 20) * ranks}, proc.stdout


# --- plans (issue 39): `mempath-mpi CMD --from SNAPSHOT [--plan-ranks N] [--plan-nodes M]` ---

FIXTURES = REPO / "tests" / "fixtures"


def plan(mpi_bin: Path, *args: str) -> subprocess.CompletedProcess:
    """A plan runs without a launcher, MPI or a GPU: the binary alone."""
    return subprocess.run([str(mpi_bin), *args], capture_output=True, text=True, timeout=60, env=ENV)


def expect_fields(stdout: str) -> dict[str, str]:
    last = stdout.splitlines()[-1]
    assert last.startswith("EXPECT "), stdout
    return {"bench": last.split()[1], **dict(w.split("=", 1) for w in last.split()[2:])}


def test_a_bw_plan_states_what_the_run_states(mpi_bin: Path, tmp_path: Path) -> None:
    """The plan of a job's shape prints the EXPECT line the run of that shape prints first:
    two ranks on this host (split in halves) as run, and as planned on its snapshot."""
    snapshot = tmp_path / "node"
    subprocess.run([str(REPO / "build" / "mempath"), "topo", "--save", str(snapshot)], check=True,
                   capture_output=True)
    args = ["bw", "--mode", "uni,bi", "--min-size", "1KiB", "--max-size", "16KiB", "--reps", "2"]
    ran = mpirun(str(mpi_bin), *args, "--output", str(tmp_path / "r.h5"))
    assert ran.returncode == 0, ran.stderr
    planned = plan(mpi_bin, *args, "--from", str(snapshot), "--plan-ranks", "2", "--plan-nodes", "1")
    assert planned.returncode == 0 and planned.stderr == "", planned.stderr
    assert planned.stdout.splitlines()[-1] == ran.stdout.splitlines()[0], (planned.stdout, ran.stdout)
    rows = [l for l in planned.stdout.splitlines() if l.startswith("PLAN mpi_bw ")]
    assert len(rows) == 2 * 5 and all("status=planned" in l and "pairs=1" in l for l in rows)


def test_a_bw_plan_of_two_nodes_pairs_the_ranks_per_node_and_splits_the_node_sizes(mpi_bin: Path) -> None:
    """The paper's Fig. 14 step on two quad GH200s, four ranks a node: four pairs."""
    proc = plan(mpi_bin, "bw", "--split", "--from", str(FIXTURES / "gh200_quad"), "--plan-ranks", "8",
                "--plan-nodes", "2")
    assert proc.returncode == 0, proc.stderr
    expect = expect_fields(proc.stdout)
    assert expect["bench"] == "mpi_bw" and expect["cases"] == expect["planned"] and float(expect["expected_s"]) > 0
    rows = [dict(w.split("=", 1) for w in l.split()[2:]) for l in proc.stdout.splitlines() if l.startswith("PLAN ")]
    assert {r["pairs"] for r in rows} == {"4"} and {r["ppn"] for r in rows} == {"4"}
    assert all(int(r["node_size"]) == 4 * int(r["size"]) for r in rows)
    # One rank per node is the default shape of a plan (MempathMpiBandwidth's first parameter).
    one = plan(mpi_bin, "bw", "--from", str(FIXTURES / "gh200_quad"))
    assert one.returncode == 0 and "pairs=1" in one.stdout, one.stderr
    # A shape the run would refuse is refused alike, in one line.
    bad = plan(mpi_bin, "bw", "--from", str(FIXTURES / "gh200_quad"), "--plan-nodes", "3")
    assert bad.returncode == 2 and error_lines(bad.stderr) and "bw runs between 2 nodes" in bad.stderr


def test_an_nccl_plan_needs_no_nccl_no_gpu_and_skips_what_the_node_lacks(mpi_bin: Path) -> None:
    """One rank per GPU of the snapshot's node by default: every placement on a quad GH200;
    on an x86 node of one H100 the GH200 placements and the peer are known skips."""
    quad = plan(mpi_bin, "nccl", "--placement", "device,hbm-system,host,peer,peer-host",
                "--from", str(FIXTURES / "gh200_quad"))
    assert quad.returncode == 0, quad.stderr
    expect = expect_fields(quad.stdout)
    assert (expect["cases"], expect["planned"], expect["skipped"]) == ("210", "210", "0")
    assert "ranks=4 nodes=1" in quad.stdout
    h100 = plan(mpi_bin, "nccl", "--placement", "device,hbm-system,host,peer,peer-host",
                "--from", str(FIXTURES / "x86_h100"))
    expect_h100 = expect_fields(h100.stdout)
    assert (expect_h100["cases"], expect_h100["planned"]) == ("210", "84")
    assert float(expect_h100["expected_s"]) < float(expect["expected_s"])
    # Fig. 19 over 8 nodes: the network's rate, slower than one node's NVLink.
    nodes = plan(mpi_bin, "nccl", "--paper-sizes", "--from", str(FIXTURES / "gh200_quad"), "--plan-nodes", "8")
    one = plan(mpi_bin, "nccl", "--paper-sizes", "--from", str(FIXTURES / "gh200_quad"))
    assert "ranks=32 nodes=8" in nodes.stdout
    assert float(expect_fields(nodes.stdout)["expected_s"]) > float(expect_fields(one.stdout)["expected_s"])


@pytest.mark.parametrize("args,hint", [
    (["nccl", "--from", str(REPO / "tests" / "fixtures" / "gh200_quad"), "--plan-ranks", "5"],
     "at most one rank per GPU"),
    (["nccl", "--plan-ranks", "4"], "with --from SNAPSHOT"),
    (["nccl", "--from", str(REPO / "tests" / "fixtures" / "x86_h100"), "--plan-ranks", "1", "--plan-nodes", "2"],
     "at least as many ranks as nodes")])
def test_a_bad_plan_is_one_line_and_exit_2(mpi_bin: Path, args: list[str], hint: str) -> None:
    proc = plan(mpi_bin, *args)  # without --from MPI starts on its own (a singleton), and the options fail
    errors = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(errors) == 1 and hint in errors[0], proc.stderr
