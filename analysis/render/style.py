"""The figure style every figure follows, the paper's and the node report's: journal widths
(3.5 in one column, 7.16 in two), fonts of 7 pt or more at that size, a colour-blind-safe
palette (Okabe and Ito) paired with distinct markers and line styles, legends outside the
data, panels that wrap into rows. ``check`` enforces the rules on a drawn figure, so a
figure that breaks one is an error, not a surprise in print."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from weakref import WeakKeyDictionary

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib import cycler  # noqa: E402  (matplotlib's own cycler)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from .. import outfiles  # noqa: E402

COLUMN_IN = 3.5   # one column of a two-column journal page
PAGE_IN = 7.16    # both columns
MIN_FONT_PT = 7.0
DPI = 300         # PNG; the PDF is vector
MIN_PANEL_IN = 1.65  # narrower panels cannot carry 7 pt tick labels
LEGEND_ROW_IN = 0.15  # one row of 7 pt legend text with its spacing

# Okabe & Ito (2008), distinguishable under the common colour-vision deficiencies; each
# series also gets its own marker and line style so it survives greyscale print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (5, 2, 1, 2)))

RC = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 8,
    "legend.title_fontsize": 7, "lines.linewidth": 1.0, "lines.markersize": 3.5,
    "axes.linewidth": 0.6, "grid.linewidth": 0.4, "grid.alpha": 0.35,
    "axes.prop_cycle": cycler(color=PALETTE) + cycler(marker=MARKERS) + cycler(linestyle=LINESTYLES),
    "pdf.fonttype": 42, "ps.fonttype": 42, "savefig.dpi": DPI, "figure.dpi": 100,
    "image.cmap": "viridis",
}
matplotlib.rcParams.update(RC)

# Axes allowed a linear value axis that does not start at zero, with the reason (the
# caption states it); every other linear axis starts at zero.
_NONZERO: WeakKeyDictionary[Axes, str] = WeakKeyDictionary()


class StyleError(ValueError):
    """A figure breaks a rule of the style."""


def series(i: int) -> dict[str, object]:
    """Colour, marker and line style of the i-th series (the cycle, for explicit plots);
    past the eighth, the markers and line styles shift against the colours, so that the
    first 64 series all differ."""
    turn = i // len(PALETTE)
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[(i + turn) % len(MARKERS)],
            "linestyle": LINESTYLES[(i + 3 * turn) % len(LINESTYLES)]}


def panels(n: int, width: float = PAGE_IN, panel_height: float = 1.8,
           max_cols: int | None = None, sharey: bool = False) -> tuple[Figure, list[Axes]]:
    """``n`` panels wrapped into rows at a journal width: as many columns as fit at
    MIN_PANEL_IN each (at most ``max_cols``); unused slots are hidden. Axes in reading order."""
    if width > PAGE_IN + 1e-9:
        raise StyleError(f"figure width {width} in exceeds the page ({PAGE_IN} in)")
    n = max(1, n)
    cols = max(1, min(n, int(width // MIN_PANEL_IN), max_cols or n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width, panel_height * rows + 0.25),
                             squeeze=False, layout="constrained", sharey=sharey)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def legend_below(fig: Figure, axes: Sequence[Axes], title: str | None = None) -> None:
    """One legend for the figure, below the panels (outside every plot), its entries the
    union of the panels' labelled artists, in as many columns as the width carries."""
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels and not label.startswith("_"):
                handles.append(h)
                labels.append(label)
    if not handles:
        return
    width_in = fig.get_size_inches()[0]
    per_char_in = 0.055  # 7 pt text, average glyph
    widest = max(len(label) for label in labels) * per_char_in + 0.45
    ncol = max(1, min(len(labels), int(width_in // widest)))
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, title=title,
               frameon=False, handlelength=2.2, columnspacing=1.0)
    # The legend's rows are added to the figure, not taken from the panels: without this a
    # one-column figure with long labels squeezed its plots under their legend.
    rows = math.ceil(len(labels) / ncol) + (1 if title else 0)
    fig.set_figheight(fig.get_figheight() + rows * LEGEND_ROW_IN + 0.05)


def from_zero(ax: Axes) -> None:
    """A linear value axis starts at zero (the style's default)."""
    ax.set_ylim(bottom=0)


def allow_nonzero(ax: Axes, reason: str) -> None:
    """Exempt ``ax`` from starting at zero; the reason belongs in the caption too."""
    _NONZERO[ax] = reason


def _texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def check(fig: Figure) -> None:
    """Raise StyleError where the figure breaks a rule: wider than a page, text under
    MIN_FONT_PT, bars on a log axis, a linear y axis not from zero (unless allowed), a
    legend inside a plot or taller than the plots."""
    width = fig.get_size_inches()[0]
    if width > PAGE_IN + 1e-6:
        raise StyleError(f"{width:.2f} in wide: wider than a page ({PAGE_IN} in)")
    small = sorted({f"{t.get_text()[:30]!r} {t.get_fontsize():.1f} pt" for t in _texts(fig)
                    if t.get_fontsize() < MIN_FONT_PT - 1e-6})
    if small:
        raise StyleError(f"text under {MIN_FONT_PT:g} pt: {', '.join(small[:5])}")
    fig.canvas.draw()
    plots = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    plot_height = sum(ax.get_window_extent().height for ax in plots)
    for ax in plots:
        for axis, scale in (("x", ax.get_xscale()), ("y", ax.get_yscale())):
            if scale == "log" and any(isinstance(c, BarContainer) for c in ax.containers):
                raise StyleError(f"bars on a log {axis} axis ({ax.get_title() or ax.get_ylabel()})")
        if ax.get_yscale() == "linear" and ax.lines + ax.collections + ax.patches and not ax.images \
                and ax not in _NONZERO:
            bottom, top = sorted(ax.get_ylim())
            if bottom > 0 and not ax.get_yticklabels() == [] and ax.yaxis.get_visible():
                raise StyleError(f"linear y axis of {ax.get_title() or ax.get_ylabel()!r} starts at "
                                 f"{bottom:g}, not 0 (allow_nonzero with a reason)")
        if ax.get_legend() is not None:
            raise StyleError(f"legend inside the plot {ax.get_title() or ax.get_ylabel()!r}: "
                             "use legend_below")
    for legend in fig.legends:
        if plots and legend.get_window_extent().height > plot_height:
            raise StyleError(f"legend taller ({legend.get_window_extent().height:.0f} px) than "
                             f"the plots ({plot_height:.0f} px)")


def save(fig: Figure, out: Path, stem: str) -> list[Path]:
    """Check the figure, then write ``stem``.png (DPI) and ``stem``.pdf (vector) at the
    figure's own size (no tight crop: the width stays a journal width)."""
    try:
        check(fig)
    except StyleError:
        plt.close(fig)
        raise
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for path in paths:
        outfiles.save_figure(fig, path, dpi=DPI, metadata={"Creator": "mempath"} if path.suffix == ".pdf" else None)
    plt.close(fig)
    return paths


def cell_texts(ax: Axes, image: AxesImage, grid: np.ndarray, text: Callable[[float], str]) -> list[Text]:
    """Write each measured cell of a heat map (``grid``, NaN: none) as ``text(value)`` at
    7 pt, white on the image's dark colours, black on its light ones; the texts written."""
    texts = []
    for (i, j), value in np.ndenumerate(grid):
        if math.isfinite(value):
            dark = np.mean(image.cmap(image.norm(value))[:3]) < 0.5
            texts.append(ax.text(j, i, text(value), ha="center", va="center", fontsize=7,
                                 color="white" if dark else "black"))
    return texts


def heat_map(ax: Axes, grid: np.ndarray, norm: object, text: Callable[[float], str], rows: Sequence[str],
             columns: Sequence[str], ylabel: str, xlabel: str) -> AxesImage:
    """Draw ``grid`` (NaN: not measured, grey) as a heat map on the colour scale ``norm``,
    each measured cell's ``text`` (cell_texts), ``rows`` and ``columns`` (rotated) as tick
    labels, the axes named; the image (for a colour bar)."""
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", norm=norm)
    cell_texts(ax, image, grid, text)
    ax.set_xticks(range(len(columns)), columns, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_facecolor("0.88")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return image


def log_log(ax: Axes, ticks: Sequence[int], labels: Sequence[str], xlabel: str, ylabel: str,
            rotation: float = 0) -> None:
    """Log-log axes once the data is drawn: x in base 2 with a tick at each of ``ticks``
    (labelled ``labels``) and no others, y by log_axis; the major grid; the axes named."""
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, labels, rotation=rotation)
    ax.xaxis.set_minor_locator(NullLocator())
    log_axis(ax, "y")
    ax.grid(True, which="major")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def log_axis(ax: Axes, axis: str = "y", base: int = 10) -> None:
    """A log axis whose tick labels are plain numbers (0.5, 20, 1000, not 10^3 or 1.4x10^2);
    call it once the data is drawn. In-between ticks are labelled where the axis spans few
    decades: those at 2, 3 and 5 under one decade, at 2 and 5 under two."""
    from matplotlib.ticker import FuncFormatter

    def plain(value: float, _pos: object = None) -> str:
        text = f"{value:.3g}"
        return f"{value:.0f}" if "e+" in text else text
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=base)
    target.set_major_formatter(FuncFormatter(plain))
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    span = high / low if low > 0 else math.inf

    def minor(value: float, _pos: object = None) -> str:
        lead = round(value / base ** math.floor(math.log(value, base) + 1e-9))
        return plain(value) if (span < base and lead in (2, 3, 5)) or (span < base ** 2 and lead in (2, 5)) else ""
    target.set_minor_formatter(FuncFormatter(minor))
