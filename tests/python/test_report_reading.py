"""The report reads as a person wrote it (issue 47): each node's conditions once over its runs,
error texts in words, no table of empty cells, no promise a figure does not keep (a "% of
peak" where no peak is known), figures shown at one scale. The checks of report_reading.py
are proved to fail on what they look for, then held over a CPU VM's suite (recorded, real);
test_centre_runs_recorded.py holds them over the recorded runs of an H200 node and the
figures' property test over subsets of every recorded run."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
import pytest  # noqa: E402

from analysis import outfiles  # noqa: E402
from analysis.__main__ import main  # noqa: E402
from analysis.model import causes  # noqa: E402
from analysis.render import html, style  # noqa: E402
from conftest import REPO  # noqa: E402
import report_reading  # noqa: E402

#: The README's first command on this project's 2-core VM (no GPU, no cpufreq, no NVIDIA
#: driver), 2026-12-06 at f7bd62b: seven result files of one node with their conditions.
VM_SUITE = REPO / "docs" / "results" / "raw" / "2026-12-06-cpu-vm-suite"


# ---- the checks fail on what they look for --------------------------------------------------

OLD_SHAPE = """## Conditions and causes

### a/bw on `vm`

NVML: NVML not available: libnvidia-ml.so.1: cannot open shared object file: No such file or directory. 4 readings.

| CPU node | governor | max MHz |
|---|---|---|
| cpu0 |  |  |

Host: cpufreq driver `none`; THP `always [madvise] never`; automatic NUMA balancing `0`; load average 2.0.

### b/bw on `vm`

Host: cpufreq driver `none`; THP `always [madvise] never`; automatic NUMA balancing `0`; load average 2.0.
"""


def test_the_checks_find_a_repeat_a_raw_error_and_an_empty_table() -> None:
    found = report_reading.faults(OLD_SHAPE)
    assert any(f.startswith("a paragraph stands twice: 'Host: cpufreq") for f in found), found
    assert any("cannot open shared object file" in f for f in found), found
    assert any(f.startswith("a table with every cell empty") for f in found), found
    assert report_reading.repeated("### a\n\nsame words\n\n### b\n\nsame words\n") == [
        "'### b' repeats '### a' word for word"]
    assert not report_reading.faults("### a\n\n| x | y |\n|---|---|\n| cpu0 | 3 |\n\nshort\n\nshort\n")


# ---- a recorded CPU VM suite ---------------------------------------------------------------

@pytest.fixture(scope="module")
def vm_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The report of the VM suite's files, its figures kept as drawn."""
    out = tmp_path_factory.mktemp("vm") / "report"
    figures: dict[str, Any] = {}
    real = outfiles.save_figure

    def keep(fig: Any, path: Path, **options: Any) -> Path:
        figures.setdefault(Path(path).stem, fig)
        return real(fig, path, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(outfiles, "save_figure", keep)
        assert main(["report", *map(str, sorted(VM_SUITE.rglob("*.h5"))), "-o", str(out)]) == 0
    return out, figures


def _section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_vm_suite_reads_as_written_by_a_person(vm_report) -> None:
    out, _ = vm_report
    text = (out / "index.md").read_text()
    assert not report_reading.faults(text)
    conditions = _section(text, "Conditions and causes")
    assert conditions.count("### Conditions on ") == 1 and "between the cases of 7 runs" in conditions
    assert "No NVIDIA driver on this node: GPU conditions not read." in conditions
    assert "No cpufreq on this node: no CPU governor or clock recorded." in conditions
    assert "| governor |" not in conditions
    # no peak known for this CPU: nothing promises a share of one
    assert "No path has a known theoretical peak: none is judged slow." in conditions
    assert "No path below" not in conditions
    runs = _section(text, "Runs")
    assert runs.count("| no NVIDIA driver on the node | 13.0 |") == 7  # a CUDA build on a node without the driver


def test_a_heatmap_promises_no_share_of_an_unknown_peak(vm_report) -> None:
    _, figures = vm_report
    titles = [ax.get_title() for ax in figures["path_heatmap"].axes if ax.get_title()]
    assert titles and all("% of peak" not in t for t in titles), titles


def test_latency_axes_end_with_the_data_and_labels_stand_clear(vm_report) -> None:
    _, figures = vm_report
    ax = figures["latency_by_size"].axes[0]
    ends = max(max(line.get_xdata()) for line in ax.get_lines() if len(line.get_xdata()) > 1)
    assert ax.get_xlim()[1] <= ends * 2 ** 3, (ax.get_xlim(), ends)  # the names' room, not decades
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels and all(t.endswith(("KiB", "MiB", "GiB")) for t in labels if t), labels
    prefetch = figures["chase_prefetch"]
    assert "chase" in prefetch.texts[0].get_text() and "chain" not in prefetch.texts[0].get_text()
    ticks = [t.get_text() for t in prefetch.axes[0].get_xticklabels() if t.get_text()]
    assert ticks and all(t.endswith(("KiB", "MiB", "GiB")) for t in ticks), ticks  # the latency figure's units


def test_a_cache_label_sits_where_no_line_crosses_it(vm_report) -> None:
    _, figures = vm_report
    ax = figures["latency_by_size"].axes[0]
    renderer = FigureCanvasAgg(ax.figure).get_renderer()
    caches = [t for t in ax.texts if t.get_text().startswith(("L1", "L2", "L3"))]
    assert len(caches) == 3
    for text in caches:
        box = text.get_window_extent(renderer)
        for line in ax.get_lines():
            if len(line.get_xdata()) < 2:
                continue
            points = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
            # the line's segments sampled finely: none inside the label's box
            xs = np.linspace(points[:, 0].min(), points[:, 0].max(), 2000)
            ys = np.interp(xs, points[:, 0], points[:, 1])
            inside = (xs > box.x0) & (xs < box.x1) & (ys > box.y0) & (ys < box.y1)
            assert not inside.any(), f"a line crosses {text.get_text()!r}"


def test_the_page_shows_every_figure_at_one_scale(vm_report) -> None:
    out, _ = vm_report
    page = (out / "index.html").read_text()
    widths = {int(w) for w in re.findall(r'<img alt="[^"]*" width="(\d+)"', page)}
    # a one-column figure (3.5 in) half as wide as a two-column one (7.16 in), both at the page's scale
    assert widths == {round(style.COLUMN_IN / style.PAGE_IN * html.PAGE_PX), html.PAGE_PX}, widths


@pytest.mark.parametrize("nvml, words", [
    ("NVML not available: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
     "no NVIDIA driver on this node: GPU conditions not read"),
    ("NVML not available: /x/libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
     "no NVML library at /x/libnvidia-ml.so.1 (MEMPATH_NVML_LIBRARY): GPU conditions not read"),
    ("NVML not available: nvmlInit_v2: Driver Not Loaded",
     "NVIDIA's driver did not start NVML (Driver Not Loaded): GPU conditions not read"),
    ("NVML 13.580.159.04, driver 580.159.04 (libnvidia-ml.so.1; opened in 0.010 s)",
     "GPU conditions read through NVML 13.580.159.04 (NVIDIA driver 580.159.04)")])
def test_what_nvml_said_in_words(nvml: str, words: str) -> None:
    assert causes.nvml_words(nvml) == words
    assert not report_reading.raw_errors(words)


def test_a_log_axis_under_a_decade_has_plain_labels() -> None:
    """Fig. 19's busbw panel over 1.83-1.86 GB/s printed "1.86 x 10^0"."""
    fig, ax = style.plt.subplots()
    ax.plot([1, 2, 4], [1.83, 1.85, 1.86])
    style.log_axis(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    style.plt.close(fig)
    assert labels and not [t for t in labels if "times" in t or "^" in t or "10^" in t], labels
    assert all(math.isfinite(float(t.replace("\u2212", "-"))) for t in labels), labels
