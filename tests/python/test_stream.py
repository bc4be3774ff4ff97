"""`mempath stream` end to end: STREAM's kernels on CPU cores by thread count here, and
BabelStream's on a GPU (marked `gpu`) under placement."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from analysis.report.applications import sweep_incomplete

from conftest import analysis_cli, run, summaries


def stream(binary: Path, out: Path, *args: str, check_rc: int = 0) -> list[dict[str, str]]:
    proc = run(binary, "stream", "--output", str(out), *args, check_rc=check_rc)
    return summaries(proc.stdout, "stream")


def cases(out: Path) -> dict[str, np.ndarray]:
    with h5py.File(out) as f:
        g = f["stream/cases"]
        return {k: (g[k].asstr()[()] if g[k].dtype.kind == "O" else g[k][()]) for k in g}


def test_cpu_thread_sweep_reports_the_best_thread_count(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.h5"
    lines = stream(mempath_cpu_bin, out, "--size", "64MiB", "--in-cache", "--reps", "3")
    assert {l["kernel"] for l in lines} == {"copy", "scale", "add", "triad"}
    assert all(l["status"] == "ok" for l in lines), lines
    c = cases(out)
    assert (c["verified"] == 1).all() and (c["sweep"] == 1).all()
    triad = c["kernel"] == "triad"
    best = c["threads"][triad][np.argmax(c["best_GBps"][triad])]
    assert set(c["best_threads"]) == {best}
    # STREAM's counting: add and triad move three arrays, copy and scale two.
    assert (c["bytes"][triad] == 3 * c["array_bytes"][triad]).all()
    assert (c["bytes"][c["kernel"] == "copy"] == 2 * c["array_bytes"][c["kernel"] == "copy"]).all()
    with h5py.File(out) as f:
        s = f["stream/samples"]
        assert len(s["rep"]) == 3 * len(c["case_id"])
        t = s["time_s"][()]
        bw = s["bandwidth_GBps"][()]
        ids = s["case_id"][()]
        np.testing.assert_allclose(bw, c["bytes"][ids] / t / 1e9)
        assert (bw == bw).all() and (bw > 0).all()


def test_interleave_on_one_numa_node_is_skipped_with_the_reason(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    lines = stream(mempath_cpu_bin, tmp_path / "i.h5", "--mem", "interleave", "--size", "64MiB", "--in-cache", "--threads", "all")
    if len({l["mem"] for l in lines}) and all(l["status"] == "ok" for l in lines):
        pytest.skip("this machine has several NUMA nodes: interleaving ran")
    assert all(l["status"] == "skipped" and "interleave" in l["reason"] for l in lines), lines


def test_too_short_a_repetition_fails_the_timing_guard(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.h5"
    lines = stream(mempath_cpu_bin, out, "--size", "4KiB", "--in-cache", "--threads", "1", "--reps", "2", check_rc=1)
    assert all(l["status"] == "failed" and "us" in l["reason"] for l in lines), lines
    assert (cases(out)["status"] == "failed").all()


def test_bad_input_is_one_line_and_keeps_earlier_results(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "keep.h5"
    stream(mempath_cpu_bin, out, "--size", "64MiB", "--in-cache", "--threads", "1", "--reps", "2")
    before = out.read_bytes()
    for args in (["--threads", "0"], ["--size", "100"], ["--mem", "numa99"], ["--mem", "interleave", "--pu", "cpu0"],
                 ["--pu", "gpu0"], ["--all", "--threads", "3"], ["--size", "4KiB"]):
        proc = run(mempath_cpu_bin, "stream", "--output", str(out), *args, check_rc=2)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("mempath: error: ") and ("valid" in proc.stderr or "CUDA" in proc.stderr), proc.stderr
    assert out.read_bytes() == before


@pytest.mark.gpu
def test_gpu_stream_on_device_memory_and_pinned_host(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.h5"
    dev = stream(mempath_bin, out, "--pu", "gpu0", "--mem", "gpu0", "--size", "512MiB")
    assert {l["kernel"] for l in dev} == {"copy", "mul", "add", "triad", "dot"}
    assert all(l["status"] == "ok" for l in dev), dev
    triad = {l["kernel"]: float(l["best_GBps"]) for l in dev}["triad"]
    assert triad > 1000  # HBM of any Hopper; PCIe could not do a tenth of this
    host = stream(mempath_bin, tmp_path / "h.h5", "--pu", "gpu0", "--mem", "numa0", "--alloc", "pinned",
                  "--size", "256MiB", "--reps", "3")
    assert all(l["status"] == "ok" for l in host), host
    host_triad = {l["kernel"]: float(l["best_GBps"]) for l in host}["triad"]
    assert host_triad < triad / 5
    c = cases(out)
    assert (c["verified"] == 1).all()
    assert set(c["placement"]) <= {"gpu0", "unknown"}, set(c["placement"])


def test_all_numa_writes_no_two_identical_rows(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """Issue 19: `--all --alloc numa` wrote the skipped interleave case once per thread
    count, rows equal in all but case_id. A skipped case is one case, and every row of a
    skipped case keeps the thread count it was planned with."""
    out = tmp_path / "a.h5"
    stream(mempath_cpu_bin, out, "--all", "--alloc", "numa", "--pu-kind", "cpu", "--size", "4MiB", "--in-cache",
           "--reps", "1", "--warmup", "0")
    c = cases(out)
    rows = [tuple(str(c[k][i]) for k in sorted(c) if k not in ("case_id", "best_threads"))
            for i in range(len(c["case_id"]))]
    assert len(rows) == len(set(rows)), [r for r in rows if rows.count(r) > 1]
    if (c["status"] == "skipped").any():
        assert (c["threads"][c["status"] == "skipped"] > 0).all()


def test_an_interrupted_sweep_is_marked_incomplete_in_the_file_and_the_report(
        mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """Issue #22: killed after its first thread count, a sweep's rows say sweep_complete=0 and
    the report marks its best as incomplete (it was shown as the sweep's best); a whole
    sweep says sweep_complete=1 in its rows and its lines."""
    out = tmp_path / "cut.h5"
    # --in-cache: the sweep's marking is tested, not cache residency (a 480 MiB LLC refuses 256 MiB)
    proc = subprocess.Popen([str(mempath_cpu_bin), "stream", "--pu", "cpu0", "--threads", "sweep", "--size", "256MiB",
                             "--in-cache", "--reps", "3", "--output", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (out.exists() and len(cases(out)["case_id"])):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.kill()
    proc.communicate()
    c = cases(out)
    assert set(c["threads"]) == {1} and set(c["sweep_complete"]) == {0} and set(c["best_threads"]) == {-1}
    report = tmp_path / "report"
    done = analysis_cli("report", out, "-o", report)
    assert done.returncode == 0, done.stderr
    row = next(l for l in (report / "summary.md").read_text().splitlines() if "| cpu0 | numa0 | numa |" in l)
    assert row.rstrip(" |").endswith("| 1 (sweep incomplete)"), row

    whole = tmp_path / "whole.h5"
    lines = stream(mempath_cpu_bin, whole, "--pu", "cpu0", "--size", "16MiB", "--in-cache", "--reps", "2")
    assert len(lines) >= 8 and {l["sweep_complete"] for l in lines} == {"1"}
    assert set(cases(whole)["sweep_complete"]) == {1}


def test_files_from_before_sweep_complete_mark_an_unfinished_sweep_by_best_threads() -> None:
    rows = pd.DataFrame({"sweep": [1, 1, 1, 0], "best_threads": [-1, 4, -1, -1],
                         "sweep_complete": [np.nan, np.nan, 1, -1]})  # two files read together
    assert list(sweep_incomplete(rows)) == [True, False, False, False]
    assert list(sweep_incomplete(rows.drop(columns="sweep_complete"))) == [True, False, True, False]
