"""The paper's framework: the figure style's checks (each rule can fail), memory roles seen
from a processor on every reference topology, and `python -m analysis paper` on real files
(items drawn or said why not, provenance, bad input)."""
from __future__ import annotations

import json
import re

import pytest

from analysis.figures import published as pub_mod
from analysis.figures.published import Facts, Published, hold, memcpy_definition
from analysis.model.roles import labelled, role
from analysis.paper.write import _comparison_lines
from analysis.render import style
from analysis.render.items import Comparison, Drawn, Item
from conftest import DATA, REPO, analysis_cli
from shared_render import analysis_once


def topo(name: str) -> dict:
    return json.loads((DATA / f"topology_{name}.json").read_text())


# -- roles ------------------------------------------------------------------------------

@pytest.mark.parametrize("pu, mem, expected", [
    ("cpu0", "numa0", "local LPDDR"), ("cpu0", "numa1", "peer LPDDR"),
    ("cpu0", "numa4", "local HBM"), ("cpu0", "numa12", "peer HBM"),
    ("gpu0", "numa4", "local HBM"), ("gpu0", "numa0", "local LPDDR"),
    ("gpu0", "numa3", "peer LPDDR"), ("gpu2", "numa20", "local HBM"), ("gpu2", "numa4", "peer HBM"),
    ("gpu1", "gpu1", "device memory"), ("gpu1", "gpu3", "peer device memory"),
    ("cpu3", "numa28", "local HBM"), ("cpus", "numa0", "LPDDR"),
])
def test_roles_on_a_quad_gh200_follow_the_superchip(pu, mem, expected):
    assert role(topo("gh200_quad"), pu, mem) == expected


def test_roles_on_x86_say_ddr_and_device_memory():
    t = topo("x86_h100")
    assert labelled(t, "gpu0", "numa0") == "local DDR (numa0)"
    assert labelled(t, "cpu0", "gpu0") == "device memory (gpu0)"
    assert labelled(t, "gpu0", "nothing") == "nothing"  # unknown memory: its name, no guess


# -- style ------------------------------------------------------------------------------

def test_panels_wrap_sixteen_panels_at_page_width():
    fig, axes = style.panels(16)
    assert len(axes) == 16 and fig.get_size_inches()[0] == pytest.approx(style.PAGE_IN)
    assert len({round(ax.get_position().y0, 3) for ax in axes}) > 1   # more than one row
    style.plt.close(fig)


def test_a_figure_wider_than_a_page_is_refused():
    with pytest.raises(style.StyleError, match="exceeds the page"):
        style.panels(2, width=9.0)


def _line_figure():
    fig, axes = style.panels(2, width=style.COLUMN_IN)
    for i, ax in enumerate(axes):
        ax.plot([1, 2, 3], [1, 2, 3 + i], label=f"series {i}")
        style.from_zero(ax)
    return fig, axes


def test_a_figure_in_style_saves_png_and_pdf_at_its_width(tmp_path, monkeypatch):
    # the full behaviour even under the test command's MEMPATH_FIGURES=png: a real PDF beside the PNG
    monkeypatch.delenv("MEMPATH_FIGURES", raising=False)
    fig, axes = _line_figure()
    style.legend_below(fig, axes)
    png, pdf = style.save(fig, tmp_path, "ok")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    import matplotlib.image
    assert matplotlib.image.imread(png).shape[1] == round(style.COLUMN_IN * style.DPI)


def test_under_mempath_figures_png_the_same_save_writes_the_png_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMPATH_FIGURES", "png")
    fig, axes = _line_figure()
    style.legend_below(fig, axes)
    assert style.save(fig, tmp_path, "ok") == [tmp_path / "ok.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.png"]
    import matplotlib.image
    assert matplotlib.image.imread(tmp_path / "ok.png").shape[1] == round(style.COLUMN_IN * style.DPI)


@pytest.mark.parametrize("breach, message", [
    ("small_font", "under 7 pt"), ("legend_inside", "legend inside"),
    ("bars_on_log", "bars on a log"), ("not_from_zero", "starts at"),
    ("taller_than_a_page", "taller than a page"), ("outside", "runs outside the figure"),
    ("overlap", "overlaps"), ("over_a_colour_bar", "runs over a colour bar"), ("low_contrast", "contrast 1.3:1"),
    ("small_exponent", "under 7 pt"),
])
def test_each_rule_of_the_style_fails_a_figure_that_breaks_it(tmp_path, breach, message):
    fig, axes = _line_figure()
    ax = axes[0]
    if breach == "small_font":
        ax.set_xlabel("tiny", fontsize=5)
    elif breach == "taller_than_a_page":
        fig.set_figheight(style.PAGE_HEIGHT_IN + 0.1)
    elif breach == "outside":  # a title or an axis label is wrapped (style.fit): a note is not
        ax.text(20, 2, "a note written past the plot's edge", in_layout=False)
    elif breach == "overlap":
        ax.text(2, 2, "one label")
        ax.text(2, 2, "another")
    elif breach == "over_a_colour_bar":
        image = ax.imshow([[1.0, 2.0]], extent=(1, 3, 0, 4))
        fig.colorbar(image, ax=ax)
        ax.text(3.05, 2, "a label into the colour bar", clip_on=False, in_layout=False)
    elif breach == "low_contrast":
        ax.text(1.5, 1, "yellow", color=style.PALETTE[6])   # Okabe-Ito yellow on white
    elif breach == "small_exponent":   # an offset text exists only once drawn: the check draws first
        ax.cla()
        ax.plot([1, 3], [1e-7, 3e-7])
        style.from_zero(ax)
        ax.yaxis.get_offset_text().set_fontsize(5)
    elif breach == "legend_inside":
        ax.legend()
    elif breach == "bars_on_log":
        ax.bar([1, 2], [10, 100])
        ax.set_yscale("log")
    elif breach == "not_from_zero":
        ax.set_ylim(1, 4)
    with pytest.raises(style.StyleError, match=message):
        style.save(fig, tmp_path, breach)
    assert not (tmp_path / f"{breach}.png").exists()


# What style.fit mends where the check fails (issue 38: a figure sized for a full data set,
# drawn from a small one). Each of these figures failed the check before.

def test_a_title_or_an_axis_label_longer_than_its_panel_is_wrapped(tmp_path):
    fig, axes = _line_figure()
    axes[1].set_title("a title far too long for a one-column figure, which runs past its edge")
    axes[1].set_xlabel("an axis label longer than its panel is wide")
    axes[0].set_ylabel("a y label longer than its panel is tall, past the page")
    style.save(fig, tmp_path, "wrapped")
    assert all("\n" in text for text in (axes[1].get_title(), axes[1].get_xlabel(), axes[0].get_ylabel()))


def _shown(axis, minor=False):
    """The tick labels an axis shows: in its view, not blank."""
    low, high = sorted(axis.get_view_interval())
    locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
    return [t.get_text() for t, loc in zip(axis.get_ticklabels(minor=minor), locs)
            if t.get_text() and low <= loc <= high]


def test_tick_labels_that_touch_are_thinned(tmp_path):
    """A narrow log2 axis of seven sizes (GEMM's n): every other label; a log colour bar of
    less than two decades on a short bar: its 2 and 5 labels go, the decades stay."""
    from matplotlib.colors import LogNorm
    fig, axes = style.panels(3, width=style.PAGE_IN)
    sizes = [2 ** e for e in range(10, 17)]
    axes[2].plot(sizes, range(7))
    axes[2].set_xscale("log", base=2)
    axes[2].set_xticks(sizes, [str(n) for n in sizes])
    axes[2].minorticks_off()
    style.from_zero(axes[2])
    image = axes[0].imshow([[82.6, 4065.0]], norm=LogNorm(82.6, 4065.0), aspect="auto")
    style.colour_bar(fig, image, axes[:1], "GB/s")
    fig.canvas.draw()
    assert len(_shown(fig.axes[-1].xaxis, minor=True)) > 2   # 200, 500, 2000: on 1 in of bar
    style.save(fig, tmp_path, "thinned")
    assert _shown(axes[2].xaxis) == [str(n) for n in sizes[::2]]
    assert _shown(fig.axes[-1].xaxis, minor=True) == [] and _shown(fig.axes[-1].xaxis) == ["100", "1000"]


def test_a_legend_taller_than_its_plots_grows_the_figure(tmp_path):
    """A one-row dot plot under a legend of five kernels (the report's GPU stream figure of
    one placement): the plot grows to the legend's height."""
    fig, axes = style.panels(1, width=style.COLUMN_IN, panel_height=0.8)
    for i in range(5):
        axes[0].plot([0, 1], [0, i], label=f"kernel {i}")
    style.from_zero(axes[0])
    axes[0].set(title="gpu0: arrays in", xlabel="best GB/s")
    fig.suptitle("GPU stream kernels by placement of the arrays")
    style.legend_below(fig, axes)
    height = fig.get_figheight()
    style.save(fig, tmp_path, "grown")
    assert fig.get_figheight() > height


def test_an_axis_allowed_not_to_start_at_zero_passes(tmp_path):
    fig, axes = _line_figure()
    for ax in axes:
        ax.set_ylim(1, 4)
        style.allow_nonzero(ax, "test: the spread is the point")
    style.save(fig, tmp_path, "nonzero")


def test_a_legend_taller_than_the_plots_is_refused(tmp_path):
    fig, axes = style.panels(1, width=style.COLUMN_IN, panel_height=0.6)
    for i in range(40):
        axes[0].plot([0, 1], [0, i], label=f"a rather long series label number {i}")
    style.legend_below(fig, axes)
    with pytest.raises(style.StyleError, match="legend taller"):
        style.save(fig, tmp_path, "tall")


# -- the command -----------------------------------------------------------------------

def test_paper_from_real_files_lists_every_item_and_its_sources():
    # drawn once in the run, read here and in test_browser.py (shared_render)
    proc, out = analysis_once("paper", DATA / "h100_gemm.h5", DATA / "h100_chase_cpu.h5")
    assert proc.returncode == 0, proc.stderr
    text = (out / "paper.md").read_text()
    from analysis.render.items import registry
    for item in registry("analysis.figures"):
        assert f"## {item.ref}: {item.title}" in text
    assert "Fig. 3" in text and "local DDR (numa0)" in text
    assert "h100_gemm" in text and "command" in text.lower()
    assert (out / "index.html").read_text().count("<h2") >= len(registry("analysis.figures"))
    assert "## Published values against this run" in text


def _paper_items_table() -> list[dict[str, str]]:
    """docs/paper.md's table of each figure and table, one dict a row by its header."""
    section = (REPO / "docs" / "paper.md").read_text().split("## Each figure and table", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    return [dict(zip(header, (cell.strip() for cell in row.strip("|").split(" | ")))) for row in table[2:]]


def test_docs_name_every_item_with_the_module_that_draws_it():
    """A newcomer finds a paper item's code from docs/paper.md: each registered item is in
    the row of its figure or table, by its output file, and that row names the module its
    @item is in (and no other), so renaming or moving one fails here until the doc follows."""
    from analysis.render.items import registry
    rows = _paper_items_table()
    column, output = (next(name for name in rows[0] if name.startswith(word)) for word in ("module", "output"))
    items = registry("analysis.figures")
    for row in rows:
        mine = [i for i in items if re.search(rf"`{i.key}\.", row[output])]
        assert mine, f"docs/paper.md: no item of analysis.figures writes the outputs of {row['paper']!r}"
        assert all(row["paper"] == i.ref or row["paper"].startswith(i.ref + " (") for i in mine), row["paper"]
        named = set(re.findall(r"`([a-z0-9_]+)\.py`", row[column]))
        assert named == {i.module.removeprefix("analysis.figures.") for i in mine}, (row["paper"], named)
    shown = {i.key for row in rows for i in items if re.search(rf"`{i.key}\.", row[output])}
    assert shown == {i.key for i in items}, f"docs/paper.md lacks {sorted({i.key for i in items} - shown)}"


def test_paper_without_usable_files_is_one_line_and_exit_2(tmp_path):
    empty = tmp_path / "nothing"
    empty.mkdir()
    proc = analysis_cli("paper", empty, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no .h5 file" in proc.stderr


def test_an_item_that_raises_is_said_and_the_others_drawn(tmp_path, monkeypatch, capsys):
    from analysis.__main__ import main
    from analysis.render import items
    fig3 = next(i for i in items.registry("analysis.figures") if i.ref == "Fig. 3")

    def broken(ctx):
        raise KeyError("bw/cases")

    monkeypatch.setitem(items._ITEMS, fig3.key, items.Item(**{**fig3.__dict__, "build": broken}))
    out = tmp_path / "paper"
    assert main(["paper", str(DATA / "h100_gemm.h5"), str(DATA / "h100_chase_cpu.h5"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("analysis: error:") == 1 and f"{fig3.ref} {fig3.title}: KeyError" in err
    text = (out / "paper.md").read_text()
    assert "_Not drawn: failed: Fig. 3" in text and "Traceback" in (out / "errors.log").read_text()
    assert sum(1 for p in out.glob("*.png")) >= 2  # the other items still drawn


# -- published values: comparison or context (#32) -------------------------------------

PINNED_H2D = memcpy_definition("pinned", "device")


def _published(facts: Facts, value: float = 25.0) -> Published:
    return Published("x.y", "a copy", value, "GB/s", "some-text.txt, Table 9", facts)


def test_like_facts_are_a_comparison_and_each_unlike_fact_is_named():
    source = Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "host to device", "bare metal")
    alike = Facts(("A10", "x86"), "pcie gen4 x16", PINNED_H2D, "host to device")   # the run's setting unknown
    assert source.differences(alike) == []
    h200 = Facts(("H200", "H200 SXM"), "pcie gen5 x16", PINNED_H2D, "host to device")
    assert [d.split(":")[0] for d in source.differences(h200)] == ["hardware", "link"]
    pageable = Facts(("A10",), "pcie gen4 x16", memcpy_definition("system", "device"), "host to device")
    assert [d.split(":")[0] for d in source.differences(pageable)] == ["definition"]
    summed = Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "sum of both directions")
    assert [d.split(":")[0] for d in source.differences(summed)] == ["direction"]
    vm = Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "host to device", "virtual machine")
    assert [d.split(":")[0] for d in source.differences(vm)] == ["setting"]
    # what a source does not state never matches: the run cannot be shown alike
    unstated = Facts(("H200",), pub_mod.UNSTATED, memcpy_definition(pub_mod.NOT_NAMED, "device"), "host to device")
    run = Facts(("H200", "H200 SXM"), "pcie gen5 x16", PINNED_H2D, "host to device")
    assert [d.split(":")[0] for d in unstated.differences(run)] == ["link", "definition"]
    # an alternative of several classes needs every one of them
    dual = Facts(("GH200 96GB HBM3 + LPDDR5X 480 GB module",), "c2c", PINNED_H2D, "host to device")
    quad = Facts(("GH200", "GH200 96GB HBM3", "LPDDR5X 120/240 GB module", "quad GH200"), "c2c", PINNED_H2D,
                 "host to device")
    assert [d.split(":")[0] for d in dual.differences(quad)] == ["hardware"]


def test_run_facts_come_from_the_topology():
    quad = topo("gh200_quad")
    facts = pub_mod.run_facts(quad, "gpu0", ["numa0", "gpu0"], definition=PINNED_H2D, direction="host to device")
    assert {"GH200", "GH200 96GB HBM3", "quad GH200", "LPDDR5X 120/240 GB module"} <= set(facts.hardware)
    assert facts.link == "c2c"
    assert pub_mod.link_of(quad, "gpu0", "numa1") == "nvlink+c2c"
    x86 = topo("x86_h100")
    assert pub_mod.link_of(x86, "gpu0", "numa0") == "pcie gen5 x16"
    assert set(pub_mod.hardware_classes(x86, "gpu0", ["numa0"])) == {"H100", "H100 SXM"}
    assert set(pub_mod.hardware_classes(x86, "cpu0", ["numa0"])) == {"AMD EPYC 9124 16-Core Processor"}
    assert pub_mod.gpu_classes("NVIDIA A100-SXM4-80GB") != {"A10"} and pub_mod.gpu_classes("NVIDIA A10") == {"A10"}


def test_every_published_value_states_its_facts():
    for value in pub_mod.VALUES:
        assert value.facts.hardware and value.facts.definition, value.key


def _item(key: str, ref: str) -> Item:
    return Item(key, ref, key, "figure", (), "", 0, lambda ctx: None, "analysis.figures.test")


def test_the_table_compares_like_with_like_and_shows_the_rest_apart_without_a_ratio():
    """The old table gave a ratio for every row: an A10 on PCIe gen 4 against an H200 on gen 5,
    a pageable copy against a pinned one, a row of no stated facts."""
    source = Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "host to device", "bare metal")
    alike = hold("fig5", _published(source), 20.0, "A10 pinned copy [node a]",
                 Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "host to device"))
    a10_vs_h200 = hold("fig5", _published(source), 55.0, "A10 pinned copy [node b]",
                       Facts(("H200", "H200 SXM"), "pcie gen5 x16", PINNED_H2D, "host to device"))
    pageable = hold("fig5", _published(Facts(("A10",), "pcie gen4 x16", memcpy_definition("system", "device"),
                                             "host to device")), 12.0, "A10 pageable copy [node a]",
                    Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "host to device"))
    bare = Comparison("fig5", "a row without facts", 10.0, 5.0, "GB/s", "other.txt")
    assert alike.comparable and not a10_vs_h200.comparable and not pageable.comparable
    lines = _comparison_lines([_item("fig5", "Fig. 5")],
                              {"fig5": Drawn(comparisons=[alike, a10_vs_h200, pageable, bare])})
    text = "\n".join(lines)
    compared, context = text.split("### Context")
    assert "| ratio |" in compared and "node a" in compared and "0.80" in compared
    assert "node b" not in compared and "pageable" not in compared and "without facts" not in compared
    assert "ratio" not in context.split("\n|---")[0].split("\n")[-1]          # the context header: no ratio
    assert "hardware: A10 there, H200 SXM here; link: pcie gen4 x16 there, pcie gen5 x16 here" in context
    assert "definition: copy-engine cudaMemcpy, system -\\> device" in context   # Markdown escapes >
    assert "some-text.txt, Table 9" in context and "other.txt" in context
    assert "2.20" not in text and "0.48" not in text                        # no ratio for unlike rows


def test_no_like_row_says_so_and_lists_the_context():
    row = hold("fig5", _published(Facts(("A10",), "pcie gen4 x16", PINNED_H2D, "host to device")), 55.0,
               "copy", Facts(("H200",), "pcie gen5 x16", PINNED_H2D, "host to device"))
    text = "\n".join(_comparison_lines([_item("fig5", "Fig. 5")], {"fig5": Drawn(comparisons=[row])}))
    assert "No published value is the same quantity" in text and "### Context" in text
