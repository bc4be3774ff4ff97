"""The figure style every figure follows, the paper's and the node report's: journal widths
(3.5 in one column, 7.16 in two), fonts of 7 pt or more at that size, a colour-blind-safe
palette (Okabe and Ito) paired with distinct markers and line styles, legends outside the
data, panels that wrap into rows. ``check`` enforces the rules on a drawn figure, so a
figure that breaks one is an error, not a surprise in print; where it fails, ``save`` first
``fit``s the figure to what it holds (a figure sized for a full data set, drawn from a small
one: titles wrapped, crowded tick labels thinned, room for the legend) and checks again."""
from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from weakref import WeakKeyDictionary

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib import cycler  # noqa: E402  (matplotlib's own cycler)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from .. import outfiles  # noqa: E402

COLUMN_IN = 3.5   # one column of a two-column journal page
PAGE_IN = 7.16    # both columns
PAGE_HEIGHT_IN = 9.0  # a journal page's text height: no figure is taller
MIN_CONTRAST = 3.0    # WCAG 2's ratio for large text and graphics: text against its background
MIN_FONT_PT = 7.0
DPI = 300         # PNG; the PDF is vector
#: MEMPATH_FIGURES=png (the test command's default; docs/testing.md): every figure drawn,
#: checked and written as a PNG as always, and no PDF: a third of a report's time.
PNG_ONLY = "png"
PANEL_IN = 1.8  # a panel's height unless a figure says otherwise
COLOUR_BAR_IN = 0.6  # a colour bar below the panels, its ticks and its label
MIN_PANEL_IN = 1.65  # narrower panels cannot carry 7 pt tick labels
LEGEND_ROW_IN = 0.15  # one row of 7 pt legend text with its spacing
SLACK_PX = 1.0  # pixels at the canvas' 100 dpi by which texts may touch: glyph extents are not exact
FIT_ROUNDS = 3  # a mend moves the layout: fit measures again, at most this often

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
    # The layout leaves an x tick label overhanging the axes (only its height is laid out): a
    # label at the right end of the rightmost panel needs this much margin to stay on the page.
    "figure.constrained_layout.w_pad": 0.1,
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


def panels(n: int, width: float = PAGE_IN, panel_height: float = PANEL_IN,
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


def check(fig: Figure, page: bool = True) -> None:
    """Raise StyleError where the figure breaks a rule: wider than a page (and taller, for
    a ``page`` figure: a node report's figure of every processor may run longer on screen),
    bars on a log axis, a linear y axis not from zero (unless allowed), a legend inside a
    plot or taller than the plots, or text that cannot be read (``legibility``)."""
    width, height = fig.get_size_inches()
    if width > PAGE_IN + 1e-6:
        raise StyleError(f"{width:.2f} in wide: wider than a page ({PAGE_IN} in)")
    if page and height > PAGE_HEIGHT_IN + 1e-6:
        raise StyleError(f"{height:.2f} in tall: taller than a page ({PAGE_HEIGHT_IN:g} in)")
    problems = legibility(fig)  # draws the figure: the extents below are the laid-out ones
    plots = _plots(fig)
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
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise StyleError(f"illegible: {'; '.join(problems[:5])}{more}")


def _plots(fig: Figure) -> list[Axes]:
    """The figure's shown panels (its colour bars are not plots)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def fit(fig: Figure, page: bool = True) -> bool:
    """Mend what a layout sized for other data leaves illegible, without changing what the
    figure shows: a panel's title or an axis label that runs past the figure or into
    another text is wrapped to its room (``_room``); tick labels that touch are thinned (a
    log axis' labels between its decades first); the figure grows where its legend is
    taller than its plots (a ``page`` figure up to a page). Whether anything was mended;
    ``check`` judges the result."""
    mended = False
    for _ in range(FIT_ROUNDS):
        texts = _drawn_texts(fig)  # draws: the layout the check sees
        boxes = _boxes(fig, texts)
        steps = [_wrap_labels(fig, texts, boxes), _thin_ticks(fig, texts, boxes), _legend_room(fig, page)]
        if not any(steps):
            break
        mended = True
    return mended


def _wrap_labels(fig: Figure, texts: list[Text], boxes: np.ndarray) -> bool:
    """Wrap each panel title and axis label (colour bars' too) that runs outside the
    figure or over another text, and is longer than its room (``_room``)."""
    crowded = _outside(fig, boxes)
    for i, box in enumerate(boxes):
        crowded[i] |= bool(np.delete(_overlaps(box, boxes), i).any())
    index = {id(t): i for i, t in enumerate(texts)}
    wrapped = False
    for ax in fig.axes:
        for label in (ax.title, ax.xaxis.label, ax.yaxis.label):
            i = index.get(id(label))
            if i is not None and crowded[i]:
                wrapped |= _wrap(label, boxes[i], _room(fig, ax, label, boxes[i]))
    return wrapped


def _vertical(text: Text) -> bool:
    return round(text.get_rotation()) % 180 == 90


def _room(fig: Figure, ax: Axes, text: Text, box: np.ndarray) -> float:
    """Pixels a centred text of ``ax`` may take along its line: twice the distance from its
    centre to the nearer end of its span. A title's or an x label's span is its panel's
    cell of the grid (a colour bar's: the figure), so that it stays off its neighbours'
    texts and on the page; a y label's is its panel's height (past it: the titles, the
    legend)."""
    if _vertical(text):
        extent = ax.get_window_extent()
        low, high, centre = extent.y0, extent.y1, (box[1] + box[3]) / 2
    else:
        low, high, centre = 0.0, fig.bbox.width, (box[0] + box[2]) / 2
        spec = ax.get_subplotspec()
        if spec is not None:
            columns = spec.get_gridspec().ncols
            low, high = high * spec.colspan.start / columns, high * spec.colspan.stop / columns
    return 2 * max(0.0, min(centre - low, high - centre))


def _wrap(text: Text, box: np.ndarray, room: float) -> bool:
    """Break ``text`` into lines that fit ``room`` pixels (at its average glyph width; the
    next round measures again); whether it changed."""
    lines = text.get_text().split("\n")
    length = (box[3] - box[1]) if _vertical(text) else (box[2] - box[0])
    if length <= room:
        return False
    per_char = length / max(1, max(len(line) for line in lines))
    words = " ".join(text.get_text().split())
    wrapped = textwrap.fill(words, max(1, int(room / per_char)), break_long_words=False, break_on_hyphens=False)
    if wrapped == text.get_text():
        return False
    text.set_text(wrapped)
    return True


def _thin_ticks(fig: Figure, texts: list[Text], boxes: np.ndarray) -> bool:
    """Thin the tick labels of each axis (colour bars' too) where two that were drawn
    touch: the minor ones (a log axis' 2 and 5 between the decades) go first, then every
    other major one, every third, ... until none touch; the ticks stay."""
    where = {id(t): box for t, box in zip(texts, boxes)}
    thinned = False
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            thinned |= _thin(axis, where)
    return thinned


def _thin(axis: Axis, where: dict[int, np.ndarray]) -> bool:
    """_thin_ticks of one axis; ``where``: the extents of the texts drawn, by id."""
    drawn = sorted(((tick.get_loc(), minor, label, where[id(label)])
                    for minor, ticks in ((False, axis.get_major_ticks()), (True, axis.get_minor_ticks()))
                    for tick in ticks for label in (tick.label1, tick.label2) if id(label) in where),
                   key=lambda row: row[0])
    if not _touch([box for *_, box in drawn]):
        return False
    if any(minor for _, minor, *_ in drawn):
        axis.set_minor_formatter(NullFormatter())
        return True
    for step in range(2, len(drawn) + 1):
        kept = drawn[::step]
        if not _touch([box for *_, box in kept]):
            axis.set_ticks([loc for loc, *_ in kept], [label.get_text() for _, _, label, _ in kept])
            return True
    return False


def _touch(boxes: Sequence[np.ndarray]) -> bool:
    """Whether two neighbours of ``boxes`` (in tick order) overlap."""
    return any(_overlaps(a, b[None, :])[0] for a, b in zip(boxes, boxes[1:]))


def _legend_room(fig: Figure, page: bool) -> bool:
    """Grow the figure by what its legend is taller than its plots (the layout gives the
    plots the height added; a ``page`` figure not past a page)."""
    plots = _plots(fig)
    plot_height = sum(ax.get_window_extent().height for ax in plots)
    tallest = max((legend.get_window_extent().height for legend in fig.legends), default=0.0)
    if not plots or tallest <= plot_height:
        return False
    height = fig.get_figheight() + (tallest - plot_height) / fig.dpi + LEGEND_ROW_IN
    if page and height > PAGE_HEIGHT_IN:
        return False
    fig.set_figheight(height)
    return True


NAME_CHARS = 32  # the longest host name a figure shows whole (a cloud VM's reaches 46, Linux allows 64)


def short_name(name: str) -> str:
    """``name`` as a figure shows it: whole up to NAME_CHARS, else its ends around an
    ellipsis (the CSV beside the figure keeps it whole)."""
    if len(name) <= NAME_CHARS:
        return name
    half = (NAME_CHARS - 1) // 2
    return f"{name[:half]}\u2026{name[-(NAME_CHARS - 1 - half):]}"


def _drawn_texts(fig: Figure) -> list[Text]:
    """The texts a draw of ``fig`` puts on the page, in drawing order: what the reader sees
    (not the tick labels outside the view, nor those of hidden axes, which findobj lists),
    colour-bar offsets and exponents included (they exist only once drawn)."""
    seen: list[Text] = []
    draw = Text.draw

    def recording(text: Text, renderer: object) -> None:
        if text.get_visible() and text.get_text().strip():
            seen.append(text)
        draw(text, renderer)
    Text.draw = recording  # type: ignore[method-assign]
    try:
        fig.draw_without_rendering()  # the layout and every text placed; no pixels needed
    finally:
        Text.draw = draw  # type: ignore[method-assign]
    return list(dict.fromkeys(seen))


def _luminance(rgb: Sequence[float]) -> float:
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: Sequence[float], b: Sequence[float]) -> float:
    """WCAG 2 contrast ratio of two RGB colours (1 to 21)."""
    low, high = sorted((_luminance(a), _luminance(b)))
    return (high + 0.05) / (low + 0.05)


def _short(text: Text) -> str:
    return repr(" ".join(text.get_text().split())[:32])


def legibility(fig: Figure) -> list[str]:
    """What keeps the texts of ``fig`` from being read at 100 %, one line each: text under
    MIN_FONT_PT, text outside the figure (clipped in print), two texts overlapping, a text
    over another panel or colour bar, a text below MIN_CONTRAST against what is drawn under
    it (sampled from the figure drawn without its texts)."""
    texts = _drawn_texts(fig)
    boxes = _boxes(fig, texts)
    problems = [f"{_short(t)} at {t.get_fontsize():.1f} pt (under {MIN_FONT_PT:g} pt)"
                for t in texts if t.get_fontsize() < MIN_FONT_PT - 1e-6]
    problems += [f"{_short(t)} runs outside the figure" for t, out in zip(texts, _outside(fig, boxes)) if out]
    panels = [ax for ax in fig.axes if ax.get_visible()]
    for ax in panels:
        over = _overlaps(ax.get_window_extent(fig.canvas.get_renderer()).extents, boxes)
        name = "a colour bar" if ax.get_label() == "<colorbar>" else repr(ax.get_title() or ax.get_ylabel())
        problems += [f"{_short(t)} runs over {name}" for t, hit in zip(texts, over) if hit and t.axes is not ax]
    for i in range(len(texts) - 1):
        hit = _overlaps(boxes[i], boxes[i + 1:])
        problems += [f"{_short(texts[i])} overlaps {_short(texts[i + 1 + j])}" for j in np.nonzero(hit)[0]]
    problems += _low_contrast(fig, texts, boxes)
    return problems


def _boxes(fig: Figure, texts: Sequence[Text]) -> np.ndarray:
    """The extents (x0, y0, x1, y1, display pixels) of drawn ``texts``, a row each."""
    renderer = fig.canvas.get_renderer()
    return np.array([list(t.get_window_extent(renderer).extents) for t in texts]).reshape(-1, 4)


def _outside(fig: Figure, boxes: np.ndarray) -> np.ndarray:
    """Which of ``boxes`` reach past the figure's edges."""
    width, height = fig.bbox.width, fig.bbox.height
    return ((boxes[:, 0] < -SLACK_PX) | (boxes[:, 1] < -SLACK_PX) | (boxes[:, 2] > width + SLACK_PX)
            | (boxes[:, 3] > height + SLACK_PX))


def _overlaps(box: Sequence[float], boxes: np.ndarray) -> np.ndarray:
    """Which of ``boxes`` overlap ``box`` (x0, y0, x1, y1) by more than SLACK_PX both ways."""
    return ((np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]) > SLACK_PX)
            & (np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]) > SLACK_PX))


def _low_contrast(fig: Figure, texts: list[Text], boxes: np.ndarray) -> list[str]:
    """Each text's colour against the median colour under it, drawn without texts and
    without re-running the layout (which would move the panels into the texts' space)."""
    engine = fig.get_layout_engine()
    fig.set_layout_engine("none")
    for t in texts:
        t.set_visible(False)
    try:
        fig.canvas.draw()
        pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
    finally:
        for t in texts:
            t.set_visible(True)
        fig.set_layout_engine(engine)
    rows, cols = pixels.shape[:2]
    problems = []
    for t, (x0, y0, x1, y1) in zip(texts, boxes):
        c0, c1 = max(0, int(x0)), min(cols, int(math.ceil(x1)))
        r0, r1 = max(0, int(rows - y1)), min(rows, int(math.ceil(rows - y0)))
        if c1 <= c0 or r1 <= r0:
            continue
        under = np.median(pixels[r0:r1, c0:c1].reshape(-1, 3), axis=0)
        box = t.get_bbox_patch()
        if box is not None and box.get_facecolor()[3] > 0.9:
            under = box.get_facecolor()[:3]
        ratio = contrast(matplotlib.colors.to_rgba(t.get_color()), under)
        if ratio < MIN_CONTRAST:
            problems.append(f"{_short(t)} at contrast {ratio:.1f}:1 (under {MIN_CONTRAST:g}:1)")
    return problems


def ink(background: Sequence[float]) -> str:
    """White or black: the text colour of higher contrast on ``background`` (at least 4.6:1
    on any colour)."""
    return "white" if contrast(background, (1, 1, 1)) > contrast(background, (0, 0, 0)) else "black"


def readable(color: object, background: object = "white") -> str:
    """``color``, darkened (kept in hue) until it reads at MIN_CONTRAST on ``background``:
    the colour of a text that names a series drawn in ``color``."""
    rgb = np.array(matplotlib.colors.to_rgb(color))
    back = matplotlib.colors.to_rgb(background)
    while contrast(rgb, back) < MIN_CONTRAST + 0.05:
        rgb = rgb * 0.9
    return matplotlib.colors.to_hex(rgb)


def png_only() -> bool:
    """Whether figures are written without their PDF (MEMPATH_FIGURES=png)."""
    return os.environ.get("MEMPATH_FIGURES") == PNG_ONLY


def figure_names(stem: str) -> list[str]:
    """The files ``save`` writes of a figure: its PNG, and its PDF unless png_only()."""
    return [f"{stem}.png", *([] if png_only() else [f"{stem}.pdf"])]


def figure_links(stem: str) -> str:
    """The Markdown links to a figure's files: "[PNG](stem.png), [PDF](stem.pdf)"."""
    return ", ".join(f"[{name.rsplit('.', 1)[1].upper()}]({name})" for name in figure_names(stem))


def save(fig: Figure, out: Path, stem: str, page: bool = True, pdf: bool = True) -> list[Path]:
    """Check the figure (``page``: as a journal page's, check; where it fails, ``fit`` mends
    what it can and checks again), then write ``stem``.png (DPI) and ``stem``.pdf (vector;
    ``pdf`` False: the PNG alone, for a page that only shows it) at the figure's own size
    (no tight crop: the width stays a journal width). A figure that fails is not written:
    StyleError says why."""
    try:
        _checked(fig, page)
    except StyleError:
        plt.close(fig)
        raise
    paths = [out / name for name in figure_names(stem) if pdf or name.endswith(".png")]
    # Written as checked: the layout the check drew stays (each save would run the layout
    # engine again, at the PNG's DPI, on what the check has not seen; and it is the
    # slowest part of a save).
    fig.set_layout_engine("none")
    for path in paths:
        outfiles.save_figure(fig, path, dpi=DPI, metadata={"Creator": "mempath"} if path.suffix == ".pdf" else None)
    plt.close(fig)
    return paths


def _checked(fig: Figure, page: bool) -> None:
    """``check``; where it fails, ``fit`` and check again: a figure sized for more (or less)
    data than it holds is mended where it can be, one that passes is written as drawn."""
    try:
        check(fig, page=page)
    except StyleError:
        if not fit(fig, page):
            raise
        check(fig, page=page)


def cell_texts(ax: Axes, image: AxesImage, grid: np.ndarray, text: Callable[[float], str]) -> list[Text]:
    """Write each measured cell of a heat map (``grid``, NaN: none) as ``text(value)`` at
    7 pt, white on the image's dark colours, black on its light ones; the texts written."""
    texts = []
    for (i, j), value in np.ndenumerate(grid):
        if math.isfinite(value):
            texts.append(ax.text(j, i, text(value), ha="center", va="center", fontsize=7,
                                 color=ink(image.cmap(image.norm(value)))))
    return texts


def heat_map(ax: Axes, grid: np.ndarray, norm: object, text: Callable[[float], str], rows: Sequence[str],
             columns: Sequence[str], ylabel: str, xlabel: str, aspect: str = "equal") -> AxesImage:
    """Draw ``grid`` (NaN: not measured, grey) as a heat map on the colour scale ``norm``,
    each measured cell's ``text`` (cell_texts), ``rows`` and ``columns`` (rotated) as tick
    labels, the axes named (``aspect``: "auto" lets cells fill the panel's width); the image
    (for a colour bar)."""
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", norm=norm, aspect=aspect)
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


def _log_labels(low: float, high: float, base: int = 10) -> tuple[object, object]:
    """Formatters of a log axis from ``low`` to ``high`` whose tick labels are plain numbers
    (0.5, 20, 1000, 10k, 2M; not 10^3 or 1.4x10^2): the decades, and the in-between ticks where the
    axis spans few decades (those at 2, 3 and 5 under one decade, at 2 and 5 under two)."""
    from matplotlib.ticker import FuncFormatter

    def plain(value: float, _pos: object = None) -> str:
        for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):  # 10k, 100k, 1M: narrow enough for a tick
            if value >= scale:
                return f"{value / (scale if suffix != 'k' else 1e3):.3g}{suffix}"
        text = f"{value:.3g}"
        return f"{value:.0f}" if "e+" in text else text
    span = high / low if low > 0 else math.inf

    def minor(value: float, _pos: object = None) -> str:
        share = value / base ** math.floor(math.log(value, base) + 1e-9)
        lead = round(share)
        if abs(share - lead) > 1e-6:  # not a tick at 2, 3 or 5 times a power: unlabelled
            return ""
        return plain(value) if (span < base and lead in (2, 3, 5)) or (span < base ** 2 and lead in (2, 5)) else ""
    return FuncFormatter(plain), FuncFormatter(minor)


def log_axis(ax: Axes, axis: str = "y", base: int = 10) -> None:
    """A log axis whose tick labels are plain numbers (_log_labels); call it once the data
    is drawn. Under one decade, at most four plain ticks (matplotlib's log locator falls
    back to a tick at every step of the span there, which a narrow panel cannot label)."""
    from matplotlib.ticker import MaxNLocator, NullLocator

    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=base)
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    major, minor = _log_labels(low, high, base=base)
    if low > 0 and high / low < base:
        target.set_major_locator(MaxNLocator(nbins=4))
        target.set_minor_locator(NullLocator())
    target.set_major_formatter(major)
    target.set_minor_formatter(minor)


def colour_bar(fig: Figure, image: AxesImage, axes: Sequence[Axes], label: str) -> None:
    """One colour bar for the heat maps ``axes`` share, below them (a bar beside the panels
    stood under their titles and its label ran past the figure), its label on one line,
    a log scale's ticks as plain numbers."""
    from matplotlib.colors import LogNorm

    bar = fig.colorbar(image, ax=list(axes), label=label, location="bottom", shrink=0.6, aspect=40)
    fig.set_figheight(fig.get_figheight() + COLOUR_BAR_IN)  # the bar's room, not the panels'
    if isinstance(image.norm, LogNorm):
        major, minor = _log_labels(image.norm.vmin, image.norm.vmax)
        bar.ax.xaxis.set_major_formatter(major)
        bar.ax.xaxis.set_minor_formatter(minor)
