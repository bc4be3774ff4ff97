"""Allocator heatmap and unified-memory figure from files the binary wrote on the H100
box (2026-11-22, docs/results/2026-11-22-h100-transfers.md)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis.render.items import Context
from analysis.report import unified
from analysis.results.io import RunSet, load_runs
from conftest import DATA, REPO, analysis_cli, figure_suffixes

RUNS = [DATA / "h100_allocmatrix.h5", DATA / "h100_um.h5"]


def test_figures_and_lines_from_real_runs(tmp_path: Path) -> None:
    part = unified.write(Context.of(load_runs(RUNS), tmp_path))
    names = {p.name for p in part.files}  # cudamemcpy_allocators: the paper's Fig. 5; each figure's source data
    assert names == {f"{stem}{suffix}" for stem in ("cudamemcpy_allocators", "unified_memory")
                     for suffix in (*figure_suffixes(), ".csv")}
    assert all(p.stat().st_size > 10_000 for p in part.files if p.suffix != ".csv")
    assert not part.missing
    assert any("no ATS/HMM" in line for line in part.lines)  # the skipped system cases


def test_nothing_to_draw_is_said(tmp_path: Path) -> None:
    empty = RunSet(runs=[], tables={})
    part = unified.write(Context.of(empty, tmp_path))
    assert part.files == [] and len(part.missing) == 2


def test_a_run_without_inplace_or_evict_samples_draws_the_interleave_panel(tmp_path: Path) -> None:
    """A log axis of nothing raised (the reports of the 2026-11-26/27 paper sets exited 1):
    the experiments with no sample above 0 GB/s get no panel, and the note says so."""
    runs = load_runs(RUNS[1:])
    samples = runs.table("um/samples")
    runs.tables["um/samples"] = samples.assign(bandwidth_GBps=np.where(samples["experiment"] == "evict", 0.0,
                                                                        samples["bandwidth_GBps"]))
    runs.tables["um/samples"] = runs.tables["um/samples"][runs.tables["um/samples"]["experiment"] != "inplace"]
    drawn = unified.um_figure(Context.of(runs, tmp_path))
    assert [p.name for p in drawn.files] == [f"unified_memory{suffix}" for suffix in (*figure_suffixes(), ".csv")]
    note = " ".join(drawn.notes)
    assert "No panel for inplace, evict" in note and "Not drawn (0 GB/s" in note


def test_the_report_of_a_recorded_paper_set_exits_0_with_no_errors_log(tmp_path: Path) -> None:
    """Its um/samples hold interleave only: the unified-memory figure raised on the empty
    log axes of the other experiments, and the report exited 1 with an errors.log."""
    recorded = REPO / "docs" / "results" / "raw" / "2026-11-27-paper-h200x2"
    proc = analysis_cli("report", *sorted(recorded.glob("*.h5")), "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "errors.log").exists()
    assert "(unified_memory.png)" in (tmp_path / "summary.md").read_text()
