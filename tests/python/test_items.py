"""The one registry of items (analysis/render/items.py): an item registered once is drawn by
the paper and, named by its key, by the node report, through the same builder; the faceted
figures' one tail says why when there is nothing to draw and writes the source data, one
row per mark drawn."""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from analysis import figures
from analysis.paper.write import write_paper
from analysis.render import items, style
from analysis.render.items import Context, Drawn, Grid, Item, faceted
from analysis.report import latency, scaleout
from analysis.report.sections import Part
from analysis.report.write import write_report
from analysis.results.io import RunSet, load_runs
from conftest import DATA, figure_suffixes

CHASE = [DATA / "h100_chase_cpu.h5", DATA / "h100_chase_gpu.h5"]
PINGPONG = DATA / "h100_pingpong.h5"


def _probe(ctx: Context) -> Drawn:
    cases = ctx.table("chase/cases")
    data = cases[cases["status"] == "ok"].head(5)
    return faceted(ctx, "probe", data, "no chase case", lambda d: Grid(
        ["all"], lambda ax, _: ax.plot(np.arange(len(d)), d["median_ns"].to_numpy(float), "o", label="ns")),
        caption=["probe caption"], csv=(data, ["pu", "mem", "median_ns"]))


def test_an_item_registered_once_is_in_the_paper_and_in_the_report_by_its_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Item("probe", "Fig. 99", "A probe", "figure", ("chase/cases",), "mempath chase", 99, _probe,
                 "analysis.figures.probe")
    monkeypatch.setitem(items._ITEMS, "probe", probe)
    assert figures.by_key("probe") is probe and figures.every()[-1] is probe
    runs = load_runs(CHASE)
    paper = write_paper(runs, tmp_path / "paper", only=("probe",))
    probe_files = [f"probe{suffix}" for suffix in (*figure_suffixes(), ".csv")]
    assert [p.name for p in paper.drawn["probe"].files] == probe_files
    assert "- probe caption" in (tmp_path / "paper" / "paper.md").read_text()
    part = Part()
    (tmp_path / "report").mkdir()
    part.add_item(Context.of(runs, tmp_path / "report"), "probe")
    assert [p.name for p in part.files] == probe_files
    assert "### A probe (Fig. 99)" in part.lines and "- probe caption" in part.lines
    for name in ("probe.png", "probe.csv"):
        assert (tmp_path / "paper" / name).read_bytes() == (tmp_path / "report" / name).read_bytes()


def test_the_report_shows_the_papers_figures_as_the_paper_draws_them(tmp_path: Path) -> None:
    runs = [*CHASE, PINGPONG]
    write_report(load_runs(runs), tmp_path / "report")
    paper = write_paper(load_runs(runs), tmp_path / "paper", only=(*latency.SHARED, *scaleout.SHARED))
    summary = (tmp_path / "report" / "summary.md").read_text()
    for key in latency.SHARED:  # Figs. 12-13: one item, the same drawing in both
        assert paper.drawn[key].files and f"({key}.png)" in summary
        ours, theirs = (matplotlib.image.imread(tmp_path / f / f"{key}.png") for f in ("report", "paper"))
        assert np.array_equal(ours, theirs), key
    for key in scaleout.SHARED:  # not measured: neither draws it, the report says nothing of it
        assert not paper.drawn[key].files and not (tmp_path / "report" / f"{key}.png").exists()


def test_the_tail_says_why_when_there_is_nothing_to_draw(tmp_path: Path) -> None:
    ctx = Context.of(RunSet(runs=[], tables={}), tmp_path)
    drawn = faceted(ctx, "empty", pd.DataFrame(), "no case finished", lambda d: Grid([], lambda ax, p: None),
                    notes=["a note"])
    assert drawn.files == [] and drawn.why_not == "no case finished" and drawn.notes == ["a note"]
    assert list(tmp_path.iterdir()) == []


def test_the_tail_writes_one_source_data_row_per_mark_drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marks: list[int] = []
    real = style.save
    monkeypatch.setattr(style, "save", lambda fig, out, stem, **kw: marks.append(
        sum(len(line.get_xdata()) for ax in fig.axes for line in ax.lines)) or real(fig, out, stem, **kw))
    data = pd.DataFrame({"panel": ["a", "a", "b"], "x": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0], "extra": [0, 0, 0]})

    def grid(rows: pd.DataFrame) -> Grid:
        def draw(ax, panel: str) -> None:
            mine = rows[rows["panel"] == panel]
            ax.plot(mine["x"], mine["y"], "o", label="y")
            style.from_zero(ax)
        return Grid(list(dict.fromkeys(rows["panel"])), draw, lambda p: f"panel {p}")

    drawn = faceted(Context.of(RunSet(runs=[], tables={}), tmp_path), "marks", data, "none", grid,
                    caption=["c"], runs=["r"], csv=(data, ["panel", "x", "y", "missing"]))
    assert [p.name for p in drawn.files] == [f"marks{suffix}" for suffix in (*figure_suffixes(), ".csv")]
    with open(tmp_path / "marks.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert marks == [len(rows)] == [3]
    assert list(rows[0]) == ["panel", "x", "y"]  # the columns kept, those absent left out
    assert drawn.notes == ["c"] and drawn.runs == ["r"]
