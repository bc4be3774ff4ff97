"""The node report's figures follow the one figure style (analysis/render/style.py, issue
#20 item 4): drawn whole from a synthetic quad-GH200 set (tests/python/synth_report.py: 4
CPUs + 4 GPUs, 12 memories, every family the report draws) and from the real result files
of tests/python/data, every figure is at most a page wide, has its PDF (none under
MEMPATH_FIGURES=png), passed style.check (save raises otherwise; the check is counted here),
wraps its panels, names memories by their role, and a heatmap too large for 7 pt numbers
drops them and says so."""
from __future__ import annotations

from pathlib import Path

import h5py
import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

import synth_report
from analysis.model import roles
from analysis.render import figures, style
from analysis.render.items import Context, Grid, faceted
from analysis.report.write import write_report
from analysis.results.io import RunSet, load_runs
from conftest import DATA, assert_pdf, figure_suffixes
from h5fixtures import topology

MAX_PX = round(style.PAGE_IN * style.DPI)  # 2148
# latency_by_size, pingpong, cudamemcpy_allocators, mpi_bandwidth, nccl_by_size: the paper's
# Figs. 12, 13, 5, 14 and 18, drawn by their items (analysis/figures).
QUAD_FIGURES = {"thread_scaling", "copy_heatmap", "path_heatmap", "transfer_sweep", "transfer_latency",
                "latency_by_size", "latency_by_size_supplementary", "chase_prefetch", "pingpong",
                "pingpong_supplementary", "pingpong_distribution", "stream_threads",
                "stream_gpu_placement", "gemm_sweep", "cudamemcpy_allocators", "mpi_bandwidth"}
REAL_FIGURES = {"latency_by_size", "chase_prefetch", "pingpong", "pingpong_distribution", "stream_threads",
                "stream_gpu_placement", "gemm_sweep", "llm_placement", "cudamemcpy_allocators", "unified_memory",
                "nccl_by_size"}


def _render(out: Path, paths: list[Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Figure]]:
    """The whole report of ``paths`` into ``out``; the figures style.check passed."""
    checked: list[Figure] = []
    real = style.check
    monkeypatch.setattr(style, "check", lambda fig, **kw: real(fig, **kw) or checked.append(fig))
    write_report(load_runs(paths), out)
    return out, checked


@pytest.fixture(scope="module")
def quad(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Figure], list[Path]]:
    folder = tmp_path_factory.mktemp("quad")
    paths = synth_report.write(folder / "runs", topology("gh200_quad"))
    with pytest.MonkeyPatch.context() as mp:
        out, checked = _render(folder / "report", paths, mp)
    return out, checked, paths


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Figure]]:
    folder = tmp_path_factory.mktemp("real")
    with pytest.MonkeyPatch.context() as mp:
        return _render(folder / "report", sorted(DATA.glob("*.h5")), mp)


def _titled(checked: list[Figure], start: str) -> Figure:
    """The checked figure whose title (or first panel's title) starts with ``start``."""
    for fig in checked:
        titles = [fig._suptitle.get_text() if fig._suptitle else ""] + [ax.get_title() for ax in fig.axes]
        if any(t.startswith(start) for t in titles):
            return fig
    raise AssertionError(f"no figure titled {start!r}")


def _panelled(checked: list[Figure], titles: list[str]) -> Figure:
    """The checked figure whose shown panels have exactly ``titles``."""
    return next(f for f in checked if [ax.get_title() for ax in f.axes if ax.get_visible() and ax.get_title()]
                == titles)


def _assert_every_figure_in_style(out: Path, checked: list[Figure], expected: set[str]) -> None:
    pngs = sorted(out.glob("*.png"))
    assert {p.stem for p in pngs} == expected
    assert len(checked) == len(pngs)  # each one through style.save, whose check passed
    for png in pngs:
        width = matplotlib.image.imread(png).shape[1]
        assert width <= MAX_PX, f"{png.name}: {width} px wide"
        assert width in (round(style.COLUMN_IN * style.DPI), MAX_PX), f"{png.name}: not a journal width"
        assert_pdf(png.with_suffix(".pdf"))
    for fig in checked:
        assert not fig.legends or all(ax.get_legend() is None for ax in fig.axes)
        assert not any(isinstance(c, BarContainer) for ax in fig.axes for c in ax.containers)
    summary = (out / "summary.md").read_text()
    for stem in expected:
        assert all(f"({stem}{suffix})" in summary for suffix in figure_suffixes())


def test_the_whole_report_of_a_synthetic_quad_gh200_is_in_style(quad) -> None:
    out, checked, paths = quad
    for path in paths:
        with h5py.File(path) as f:
            assert int(f.attrs["synthetic"]) == 1  # a model, never presented as a measurement
    _assert_every_figure_in_style(out, checked, QUAD_FIGURES)


def test_quad_panels_wrap_into_rows(quad) -> None:
    _, checked, _ = quad
    chase = _panelled(checked, [*(f"cpu{i}" for i in range(4)), *(f"gpu{i}" for i in range(4))])  # Fig. 12
    panels = [ax for ax in chase.axes if ax.get_visible() and ax.get_title()]
    rows = {round(ax.get_position().y0, 3) for ax in panels}
    assert len(rows) == 4  # two to a row at page width, as in the paper
    scaling = _titled(checked, "cpu0 read")
    assert len([ax for ax in scaling.axes if ax.get_visible()]) == 8  # 4 CPUs x read, write
    assert scaling.get_size_inches()[0] == pytest.approx(style.PAGE_IN)


def test_quad_lines_are_memories_by_role(quad) -> None:
    _, checked, _ = quad
    scaling = _titled(checked, "cpu0 read")
    labels = [t.get_text() for t in scaling.legends[0].get_texts()]
    assert {"local LPDDR", "peer LPDDR", "local HBM", "peer HBM", "device memory", "peer device memory"} \
        == set(labels)
    cpu1 = next(ax for ax in scaling.axes if ax.get_title() == "cpu1 read")
    local = [line for line in cpu1.lines if line.get_label() == "local LPDDR"]
    assert len(local) == 1 and local[0].get_ydata()[-1] == pytest.approx(500 * 0.85)  # numa1, the model


def test_quad_heatmaps_print_numbers_only_where_7_pt_fits(quad) -> None:
    out, checked, _ = quad
    summary = (out / "summary.md").read_text()
    # 9 x 12 cells per op: numbers and % of peak printed (two panels fit the page height).
    path = _titled(checked, "read: median GB/s")
    texts = [t.get_text() for ax in path.axes for t in ax.texts]
    assert "425\n85%" in texts  # cpu0 <- numa0: 0.85 x the model's 500 GB/s
    assert all(t.get_fontsize() >= style.MIN_FONT_PT for ax in path.axes for t in ax.texts)
    # Eight processors x up to 12 x 12 copies: colour only, the cells in a CSV, the caption says so.
    copy = _titled(checked, "copy: median GB/s")
    assert not any(ax.texts for ax in copy.axes)
    assert any(ax.get_label() == "<colorbar>" for ax in copy.axes)  # the colour bar kept
    cells = pd.read_csv(out / "copy_heatmap.csv")
    assert len(cells) == 4 * 8 * 8 + 4 * 12 * 12
    failed = cells[(cells["panel"] == "cpu3") & (cells["row"] == "local LPDDR (numa3)") & (cells["column"] == "numa3")]
    assert failed["text"].tolist() == ["failed"] and np.isnan(failed["median_GBps"].iloc[0])
    section = summary.split("### Copy heatmap", 1)[1].split("###", 1)[0]
    assert "colour only" in section and "[copy_heatmap.csv](copy_heatmap.csv)" in section
    # The paper's Fig. 13: 9 flag memories x 8 x 8 agents, every round trip printed at 7 pt.
    pingpong = _titled(checked, "flag: ")
    assert any(ax.texts for ax in pingpong.axes)
    assert all(t.get_fontsize() >= style.MIN_FONT_PT for ax in pingpong.axes for t in ax.texts)


def test_the_whole_report_of_the_real_files_is_in_style(real) -> None:
    out, checked = real
    _assert_every_figure_in_style(out, checked, REAL_FIGURES)


# --- the helpers, alone ------------------------------------------------------------------

def _heat(n: int, value: float = 123.0) -> figures.Heat:
    names = [f"numa{i}" for i in range(n)]
    return figures.Heat("p", np.full((n, n), value), [[figures.heat_text(value)] * n for _ in names], names, names)


def _drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stem: str, layout: Grid) -> Figure:
    """``layout`` drawn through the one tail (items.faceted) into ``tmp_path``: the figure saved."""
    seen: dict[str, Figure] = {}
    real = style.save
    monkeypatch.setattr(style, "save", lambda fig, out, name, **kw: seen.setdefault(name, fig) and real(
        fig, out, name, **kw))
    faceted(Context.of(RunSet(runs=[], tables={}), tmp_path), stem, pd.DataFrame({"x": [1]}), "", lambda _: layout)
    return seen[stem]


def test_heatmaps_keep_numbers_that_fit_and_drop_those_that_do_not(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    layout, annotated = figures.heat_grid([_heat(3)], "GB/s", "to", "from")
    fig = _drawn(tmp_path, monkeypatch, "small", layout)
    assert annotated and [t.get_fontsize() for t in fig.axes[0].texts] == [style.MIN_FONT_PT] * 9
    assert fig.get_size_inches()[0] == pytest.approx(style.COLUMN_IN)  # small: one column
    layout, annotated = figures.heat_grid([_heat(40)], "GB/s", "to", "from")
    fig = _drawn(tmp_path, monkeypatch, "large", layout)
    assert not annotated and not fig.axes[0].texts  # 40 columns of 7 pt numbers: wider than a page
    assert fig.get_size_inches()[0] == pytest.approx(style.PAGE_IN)
    assert len(figures.heat_cells([_heat(40)], "median_GBps")) == 1600
    note = figures.colour_only([_heat(40)], False, "[large.csv](large.csv) every cell")
    assert "colour only" in note and note.endswith("[large.csv](large.csv) every cell.")
    assert figures.colour_only([_heat(3)], True, "[small.csv](small.csv) every cell") == ""
    # Many small panels wrap into rows rather than widen the figure.
    layout, _ = figures.heat_grid([_heat(4) for _ in range(9)], "GB/s", "to", "from")
    fig = _drawn(tmp_path, monkeypatch, "wrapped", layout)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    assert fig.get_size_inches()[0] <= style.PAGE_IN + 1e-9
    assert len({round(ax.get_position().y0, 3) for ax in panels}) >= 3


def test_styles_give_roles_their_place_and_never_repeat_a_look() -> None:
    styles = figures.Styles()
    assert styles("peer HBM") == style.series(4)  # its slot in the paper's order, whatever comes first
    assert styles("local DDR") == style.series(0)  # x86: DDR takes LPDDR's place
    assert styles("local HBM, managed") == style.series(1)  # a role with a qualifier keeps the role's
    assert roles.role_rank("local HBM") < roles.role_rank("peer LPDDR, managed") < roles.role_rank("copy")
    assert roles.role_rank("local LPDDR → peer HBM") == roles.role_rank("local LPDDR")
    other = figures.Styles()
    looks = [tuple(other(label).values()) for label in ("a", "b", "local HBM", *map(str, range(21)))]
    assert len(set(looks)) == 24  # past the palette's 8, still no two alike


def test_role_labels_fall_back_to_the_name() -> None:
    quad = topology("gh200_quad")
    assert roles.role_label(quad, "gpu1", "numa12") == "local HBM"
    assert roles.role_label(quad, "cpu0", "gpu2") == "peer device memory"
    assert roles.role_label(None, "cpu0", "numa0") == "numa0"
    assert roles.labelled(quad, "cpu2", "numa1") == "peer LPDDR (numa1)"
    assert roles.labelled(None, "cpu2", "numa1") == "numa1"


@pytest.mark.parametrize("n_labels", [1, 4, 8])
def test_a_long_legend_adds_height_and_never_squeezes_the_plots(tmp_path: Path, n_labels: int) -> None:
    # The CI machine's own run drew four long labels in one column under a 1.8 in panel: the
    # legend took the plot's height and the style check (rightly) refused the figure.
    fig, (ax,) = style.panels(1, style.COLUMN_IN)
    for i in range(n_labels):
        ax.plot([1, 2], [i + 1, i + 2], label=f"local DDR (NUMA 0), numa_alloc_onnode, sequential {i}")
    style.from_zero(ax)
    height = fig.get_figheight()
    style.legend_below(fig, [ax])
    figures.headed("Random vs sequential chain: what a prefetcher hides")(fig, [ax])
    assert fig.get_figheight() > height
    fig.canvas.draw()
    assert ax.get_window_extent().height > fig.legends[0].get_window_extent().height
    assert style.save(fig, tmp_path, "long_legend")
