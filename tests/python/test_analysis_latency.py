"""Latency and scale-out report parts from files the binaries wrote on the device
(2026-11-22; docs/results/2026-11-22-latency.md, docs/results/2026-11-22-scaleout.md).
h100_pingpong.h5 keeps the first 500 round trips of each case of the H100 run."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis import latency, scaleout
from analysis.io import RunSet, load_runs
from analysis.report import write_report

DATA = Path(__file__).parent / "data"
CHASE = [DATA / "h100_chase_cpu.h5", DATA / "h100_chase_gpu.h5", DATA / "h200x2_chase_peer.h5"]
PINGPONG = DATA / "h100_pingpong.h5"
NCCL = DATA / "h200x2_nccl.h5"


def test_every_latency_figure_from_real_runs(tmp_path: Path) -> None:
    part = latency.write(load_runs([*CHASE, PINGPONG]), tmp_path)
    stems = {p.stem for p in part.files}
    assert stems == {"chase_latency", "chase_prefetch", "pingpong_matrix", "pingpong_distribution"}
    assert all(p.stat().st_size > 10_000 for p in part.files)
    assert not part.missing


def test_latency_table_shows_the_measured_medians_and_skip_reasons(tmp_path: Path) -> None:
    runs = load_runs([*CHASE, PINGPONG])
    text = "\n".join(latency.write(runs, tmp_path).lines)
    chase = runs.table("chase/cases")
    gpu_1g = chase[(chase.pu == "gpu0") & (chase.size_bytes == 1 << 30) & (chase.pattern == "random")]
    assert f"{float(gpu_1g.median_ns.iloc[0]):.1f}" in text
    assert "cudaMalloc memory is not mapped for CPU access" in text  # a skipped pair says why
    pp = runs.table("pingpong/cases")
    pinned = pp[(pp.a == "cpu0") & (pp.b == "gpu0") & (pp.alloc == "pinned")].iloc[0]
    assert f"{pinned.median_ns:.0f} | {pinned.p99_ns:.0f}" in text


def test_cache_sizes_are_drawn_where_the_hardware_reported_them(tmp_path: Path, monkeypatch) -> None:
    lines = []
    import matplotlib.axes
    real = matplotlib.axes.Axes.axvline
    monkeypatch.setattr(matplotlib.axes.Axes, "axvline",
                        lambda self, x, *a, **k: lines.append(x) or real(self, x, *a, **k))
    runs = load_runs(CHASE[:2])
    latency.chase_latency(runs, tmp_path)
    caches = runs.table("chase/caches")
    assert sorted(lines) == sorted(int(b) for b in caches["bytes"])


def test_pingpong_matrix_is_symmetric_and_uses_medians(tmp_path: Path, monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(latency, "_annotate", lambda ax, grid, text, *a: seen.append((grid, text)))
    runs = load_runs([PINGPONG])
    latency.pingpong_matrix(runs, tmp_path)
    cases = runs.table("pingpong/cases")
    flags = list(dict.fromkeys(zip(cases["mem"], cases["alloc"])))
    grid, text = seen[flags.index(("numa0", "pinned"))]
    cg = cases[(cases.a == "cpu0") & (cases.b == "gpu0") & (cases.alloc == "pinned")].median_ns.iloc[0]
    assert np.isclose(grid[0, 1], cg) and np.isclose(grid[1, 0], cg)
    device = seen[flags.index(("gpu0", "device"))][1]
    assert device[0][0] == "skip"  # two CPU cores cannot share cudaMalloc memory


def test_nccl_figure_and_table_from_a_real_run(tmp_path: Path) -> None:
    runs = load_runs([NCCL])
    part = scaleout.write(runs, tmp_path)
    assert {p.stem for p in part.files} == {"nccl_bandwidth"}
    assert any("MPI node-to-node" in m for m in part.missing)  # no bw run given
    cases = runs.table("nccl/cases")
    top = cases[(cases.size_bytes == cases.size_bytes.max()) & (cases.collective == "allreduce") &
                (cases.placement == "device")]
    assert f"| allreduce | device | 2 |" in "\n".join(part.lines)
    assert f"{float(top.busbw_GBps.iloc[0]):.1f} |" in "\n".join(part.lines)


def test_report_without_latency_or_scaleout_tables_still_works(tmp_path: Path) -> None:
    empty = RunSet(runs=[], tables={})
    assert latency.write(empty, tmp_path).files == []
    assert len(latency.write(empty, tmp_path).missing) == 4
    assert scaleout.write(empty, tmp_path).files == []


def test_whole_report_links_the_latency_figures(tmp_path: Path) -> None:
    write_report(load_runs([*CHASE, PINGPONG, NCCL]), tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    for stem in ("chase_latency", "chase_prefetch", "pingpong_matrix", "pingpong_distribution", "nccl_bandwidth"):
        assert f"({stem}.png)" in summary and (tmp_path / f"{stem}.png").is_file()
