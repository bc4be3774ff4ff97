"""Allocator heatmap and unified-memory figure from files the binary wrote on the H100
box (2026-11-22, docs/results/2026-11-22-h100-transfers.md)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.report import unified
from analysis.results.io import RunSet, load_runs
from conftest import DATA

RUNS = [DATA / "h100_allocmatrix.h5", DATA / "h100_um.h5"]


def test_figures_and_lines_from_real_runs(tmp_path: Path) -> None:
    part = unified.write(load_runs(RUNS), tmp_path)
    names = {p.name for p in part.files}
    assert names == {"alloc_heatmap.png", "alloc_heatmap.pdf", "unified_memory.png", "unified_memory.pdf"}
    assert all(p.stat().st_size > 10_000 for p in part.files)
    assert not part.missing
    assert any("no ATS/HMM" in line for line in part.lines)  # the skipped system cases


def test_heatmap_cells_are_the_medians(tmp_path: Path, monkeypatch) -> None:
    runs = load_runs(RUNS[:1])
    seen = []
    real = unified.heatmaps
    monkeypatch.setattr(unified, "heatmaps", lambda heats, *a, **k: seen.extend(heats) or real(heats, *a, **k))
    files = unified.alloc_heatmap(runs, tmp_path)
    cases = runs.table("allocmatrix/cases")
    pinned_to_device = cases[(cases.src_alloc == "pinned") & (cases.dst_alloc == "device")]["median_GBps"]
    (heat,) = seen
    assert heat.grid.shape == (6, 6)
    assert np.isclose(heat.grid[2, 5], float(pinned_to_device.iloc[0]))
    assert heat.title == "host memory: local DDR (numa0)"  # its role seen from the GPU
    assert heat.rows[2] == "pinned (numa0)" and heat.cols[5] == "device"
    assert files.note == "" and not (tmp_path / "alloc_heatmap.csv").exists()  # 6 x 6: numbers printed


def test_nothing_to_draw_is_said(tmp_path: Path) -> None:
    empty = RunSet(runs=[], tables={})
    part = unified.write(empty, tmp_path)
    assert part.files == [] and len(part.missing) == 2
    assert unified.alloc_heatmap(RunSet(runs=[], tables={"allocmatrix/cases": pd.DataFrame(
        {"status": ["skipped"], "host": ["h"]})}), tmp_path) == []
