"""`mempath` end to end on this machine's CPU: summary lines, HDF5 contents, bad input,
and results that stay valid when a run is cut short."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import assert_pdf, run, summaries

SMALL = ["--size", "16MiB", "--in-cache", "--reps", "3", "--warmup", "1"]


def cases_table(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path) as f:
        return {k: f["bw/cases"][k][()] for k in f["bw/cases"]}


def test_topo_json_lists_this_node(mempath_bin: Path) -> None:
    doc = json.loads(run(mempath_bin, "topo", "--json").stdout)
    names = [p["name"] for p in doc["processors"]]
    assert "cpu0" in names or any(n.startswith("cpu") for n in names)
    assert any(m["name"].startswith("numa") for m in doc["memories"])
    assert doc["source"] == "live"


@pytest.mark.parametrize("op", ["read", "write", "copy"])
def test_bw_writes_summary_and_hdf5(mempath_bin: Path, tmp_path: Path, op: str) -> None:
    out = tmp_path / "bw.h5"
    proc = run(mempath_bin, "bw", "--op", op, *SMALL, "--threads", "1", "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok" and line["op"] == op
    assert float(line["median_GBps"]) > 0.1
    with h5py.File(out) as f:
        assert f.attrs["schema_version"] == 1
        for attr in ("tool_version", "git_revision", "command_line", "host", "topology",
                     "page_size", "thp_enabled", "start_time", "cuda_runtime_version"):
            assert attr in f.attrs, attr
        json.loads(f.attrs["topology"])
        samples = f["bw/samples"]
        assert samples["time_s"].attrs["units"] == "s"
        assert len(samples["rep"]) == 3
        bw = samples["bandwidth_GBps"][()]
        expected = samples["bytes"][()] / samples["time_s"][()] / 1e9
        np.testing.assert_allclose(bw, expected)
        factor = 2 if op == "copy" else 1
        assert samples["bytes"][0] == factor * samples["size_bytes"][0] * f["bw/cases/passes"][0]
        assert f["bw/cases/verified"][0] == 1
        assert f["bw/cases/placement"][0].decode().startswith("numa")
        assert np.isclose(f["bw/cases/median_GBps"][0], np.median(bw))


def test_thread_sweep_runs_one_case_per_count(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep.h5"
    proc = run(mempath_bin, "bw", "--threads", "sweep", *SMALL, "--output", str(out))
    threads = [int(s["threads"]) for s in summaries(proc.stdout)]
    assert threads[0] == 1 and threads == sorted(threads) and len(set(threads)) == len(threads)
    assert list(cases_table(out)["threads"]) == threads


def test_all_records_skipped_cases_with_reasons(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.h5"
    proc = run(mempath_cpu_bin, "bw", "--all", "--op", "read", *SMALL, "--output", str(out))
    lines = summaries(proc.stdout)
    skipped = [s for s in lines if s["status"] == "skipped"]
    assert any(s["alloc"] == "pinned" and "CUDA" in s["reason"] for s in skipped)
    assert any(s["status"] == "ok" for s in lines)
    table = cases_table(out)
    assert len(table["status"]) == len(lines)
    reasons = [r.decode() for r, st in zip(table["reason"], table["status"]) if st == b"skipped"]
    assert reasons and all(reasons)


LIST_HEADER = ["op", "pu", "mem", "dst", "alloc", "kernel", "threads", "size", "via", "status", "reason"]


def list_rows(binary: Path, *args: str) -> list[dict[str, str]]:
    """`mempath list`'s table: a header of column names, then one row per case."""
    lines = run(binary, "list", *args).stdout.splitlines()
    assert lines[0].split() == LIST_HEADER
    width = len(LIST_HEADER) - 1  # the reason, last, may hold spaces
    return [dict(zip(LIST_HEADER, line.split(maxsplit=width))) for line in lines[1:]]


def test_list_shows_cases_and_skip_reasons(mempath_cpu_bin: Path) -> None:
    rows = list_rows(mempath_cpu_bin)
    assert any(r["op"] == "read" and r["pu"] == "cpu0" and r["mem"] == "numa0" for r in rows)
    assert all((r["status"] == "skipped") == bool(r.get("reason")) for r in rows)
    assert any(r["status"] == "skipped" and r["reason"].startswith("no CUDA GPU") for r in rows)


def test_list_filters_on_a_quad_gh200_snapshot(mempath_cpu_bin: Path) -> None:
    fixture = str(Path(__file__).resolve().parents[1] / "fixtures" / "gh200_quad")
    full = list_rows(mempath_cpu_bin, "--from", fixture, "--op", "read")
    quick = list_rows(mempath_cpu_bin, "--from", fixture, "--op", "read", "--threads", "all", "--kernel", "grid")
    assert any(r["kernel"] == "block" for r in full) and not any(r["kernel"] == "block" for r in quick)
    threads = {int(r["threads"]) for r in quick}
    assert threads == {-1, 72, 288}, threads  # GPUs (-1), one socket, all four sockets
    assert any(r["threads"] == "1" for r in full)
    # Every HBM node is a memory the CPUs read over C2C.
    assert any((r["pu"], r["mem"], r["dst"], r["alloc"], r["via"]) == ("cpu0", "numa4", "-", "numa", "c2c")
               for r in quick)


BAD_INPUT = [
    (["bw", "--pu", "cpu99"], "valid: "),
    (["bw", "--mem", "numa77"], "valid: "),
    (["bw", "--alloc", "magic"], "valid: system, numa"),
    (["bw", "--op", "scan"], "valid: read, write, copy"),
    (["bw", "--threads", "100000"], "valid --threads"),
    (["bw", "--kernel", "block"], "GPU processors"),
    (["bw", "--size", "1MiB"], "--in-cache"),
    (["bw", "--size", "12345"], "multiple of 4KiB"),
    (["bw", "--size", "64TiB"], "free"),
    (["bw", "--reps", "0"], "from 1 to"),
    (["bw", "--frobnicate"], "valid: --op"),
    (["bw", "--noise", "cpu0:numa0"], "shares cores"),
    (["bw", "--pu", "gpu0"], "valid: "),
    (["bw", "--all", "--threads", "5"], "sweep (default) or all"),
    (["bw", "--all", "--kernel", "warp"], "valid: grid, block"),
    (["frob"], "valid: topo, list, bw"),
]


@pytest.mark.parametrize("args,hint", BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(mempath_cpu_bin: Path, tmp_path: Path,
                                          args: list[str], hint: str) -> None:
    proc = run(mempath_cpu_bin, *args, "--output", str(tmp_path / "x.h5"), check_rc=None) \
        if args[0] == "bw" else run(mempath_cpu_bin, *args, check_rc=None)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mempath: error:"), proc.stderr
    assert hint in lines[0]


def test_interrupted_run_leaves_a_valid_file(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "cut.h5"
    proc = subprocess.Popen([str(mempath_bin), "bw", "--threads", "sweep", "--op", "read", "--size",
                             "64MiB", "--in-cache", "--reps", "200", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if out.exists():
                with h5py.File(out) as f:
                    if len(f["bw/cases/case_id"]) >= 1:
                        break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    with h5py.File(out) as f:
        n = len(f["bw/cases/case_id"])
        assert n >= 1
        assert len(f["bw/samples/rep"]) == 200 * n
        assert all(s == b"ok" for s in f["bw/cases/status"][()])


def test_report_from_a_real_run(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """The analysis reads what the binary wrote in this very test run (no synthetic file)."""
    out = tmp_path / "real.h5"
    # The smallest size the cache guard allows: in-cache cases are not drawn in the report.
    topo = json.loads(run(mempath_cpu_bin, "topo", "--json").stdout)
    cache = next(p["cache_bytes"] for p in topo["processors"] if p["name"] == "cpu0")
    size = max(64 << 20, -(-4 * cache // (1 << 20)) << 20)
    run(mempath_cpu_bin, "bw", "--all", "--op", "read,copy", "--size", str(size), "--reps", "3",
        "--warmup", "1", "--output", str(out))
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "analysis", "report", str(out), "-o", str(report)],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    for name in ("summary.md", "path_matrix.md", "path_matrix.csv", "thread_scaling.png", "copy_heatmap.png"):
        assert (report / name).stat().st_size > 0, name
    assert_pdf(report / "copy_heatmap.pdf")
    with h5py.File(out) as f:
        cases = [(m, n) for m, s, t, n in zip(f["bw/cases/median_GBps"][()], f["bw/cases/status"][()],
                                              f["bw/cases/op"][()], f["bw/cases/threads"][()])
                 if s == b"ok" and t == b"read"]
    # The matrix shows the largest thread count (docs/analysis.md), not the fastest: on a
    # loaded 2-core machine fewer threads can win.
    most = max(n for _, n in cases)
    best = max(m for m, n in cases if n == most)
    matrix = (report / "path_matrix.md").read_text()
    assert f"{best:.1f}" in matrix  # the read cell shows the binary's median


def test_all_prints_a_path_matrix_per_op_after_the_summary_lines(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.h5"
    proc = run(mempath_cpu_bin, "bw", "--all", "--op", "read,copy", "--threads", "all", *SMALL,
               "--output", str(out))
    lines = proc.stdout.splitlines()
    last_summary = max(i for i, line in enumerate(lines) if line.startswith("MEMPATH "))
    tail = lines[last_summary + 1:]
    assert len(summaries(proc.stdout)) == len(cases_table(out)["status"])  # ReFrame's lines intact
    assert not any(line.startswith("MEMPATH") for line in tail)
    titles = [i for i, line in enumerate(tail) if re.match(r"bw (read|copy): median GB/s", line)]
    assert [tail[i].split(":")[0] for i in titles] == ["bw read", "bw copy"]
    table = cases_table(out)
    for i, op in zip(titles, ["read", "copy"]):
        header, row = tail[i + 1].split(), tail[i + 2].split()
        assert header[0] == "pu\\mem" and row[0] == "cpu0"
        mine = (table["op"] == op.encode()) & (table["pu"] == b"cpu0") & (table["status"] == b"ok")
        # The cell: the best median over allocators (a copy within numa0 is named by its source).
        best = max(table["median_GBps"][mine & (table["mem"] == b"numa0")])
        assert row[header.index("numa0")] == f"{best:.1f}"


def test_one_case_prints_no_matrix(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    proc = run(mempath_cpu_bin, "bw", "--threads", "1", *SMALL, "--output", str(tmp_path / "one.h5"))
    lines = proc.stdout.splitlines()  # framed by the duration lines (docs/cli.md)
    assert lines[0].startswith("EXPECT bw ") and lines[-1].startswith("ELAPSED bw ")
    assert all(line.startswith("MEMPATH ") for line in lines[1:-1])
