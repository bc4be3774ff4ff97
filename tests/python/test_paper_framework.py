"""The paper's framework: the figure style's checks (each rule can fail), memory roles seen
from a processor on every reference topology, and `python -m analysis paper` on real files
(items drawn or said why not, provenance, bad input)."""
from __future__ import annotations

import json

import pytest

from analysis.model.roles import labelled, role
from analysis.render import style
from conftest import DATA, analysis_cli


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


def test_a_figure_in_style_saves_png_and_pdf_at_its_width(tmp_path):
    fig, axes = _line_figure()
    style.legend_below(fig, axes)
    png, pdf = style.save(fig, tmp_path, "ok")
    assert pdf.read_bytes()[:4] == b"%PDF"
    import matplotlib.image
    assert matplotlib.image.imread(png).shape[1] == round(style.COLUMN_IN * style.DPI)


@pytest.mark.parametrize("breach, message", [
    ("small_font", "under 7 pt"), ("legend_inside", "legend inside"),
    ("bars_on_log", "bars on a log"), ("not_from_zero", "starts at"),
])
def test_each_rule_of_the_style_fails_a_figure_that_breaks_it(tmp_path, breach, message):
    fig, axes = _line_figure()
    ax = axes[0]
    if breach == "small_font":
        ax.set_xlabel("tiny", fontsize=5)
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

def test_paper_from_real_files_lists_every_item_and_its_sources(tmp_path):
    out = tmp_path / "paper"
    proc = analysis_cli("paper", DATA / "h100_gemm.h5", DATA / "h100_chase_cpu.h5", "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = (out / "paper.md").read_text()
    from analysis.render.items import registry
    for item in registry("analysis.figures"):
        assert f"## {item.ref}: {item.title}" in text
    assert "Fig. 3" in text and "local DDR (numa0)" in text
    assert "h100_gemm" in text and "command" in text.lower()
    assert (out / "index.html").read_text().count("<h2") >= len(registry("analysis.figures"))
    assert "## Published values against this run" in text


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
