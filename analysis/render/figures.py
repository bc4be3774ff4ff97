"""Helpers the report's figures and the fleet's share, on top of the one style (style.py:
widths, fonts, palette, legends, the check ``save`` runs); what a figure shows is its
item's (analysis/report, analysis/figures), drawn through the one tail (items.faceted).

- ``Styles``: a series style per legend label, the same role (``local HBM``) in the same
  look in every figure.
- ``heat_grid``: a faceted layout of annotated heat-map panels wrapped into rows at page
  width; annotation (7 pt) only where the cells can carry it, else the colour bar alone
  (``colour_only`` says so in the caption).
- ``headed``: a figure's title above its panels, wrapped to its width.
- ``bytes_axis``: the one x axis of buffer sizes (log2, at most four labels, 1 KiB, 1 MiB:
  the units of the tables and captions).
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from . import style
from .items import Grid
from .style import COLUMN_IN, MIN_FONT_PT, PAGE_IN  # noqa: F401 (re-exported)
from ..model.roles import ROLE_ORDER
from ..model.vocabulary import DDR, LPDDR
from ..results.transfers import size_label

#: A series slot per memory role, in roles.ROLE_ORDER (the paper's order: local before
#: peer), so that a role looks the same in every figure; DDR (x86) shares LPDDR's slot.
ROLE_SLOTS = tuple(r for r in ROLE_ORDER if DDR not in r.split())
CELL_PAD_IN = 0.1       # room around a cell's text
BARE_CELL_IN = 0.14     # a cell without text


def _role_slot(label: str) -> int | None:
    """The ROLE_SLOTS place of a label that starts with a role (``local HBM, managed``)."""
    head = " ".join(LPDDR if w == DDR else w for w in label.split(",")[0].split(" →")[0].strip().split(" "))
    return ROLE_SLOTS.index(head) if head in ROLE_SLOTS else None


class Styles:
    """The style of each label of one figure: a label that is a memory role takes its slot
    of ROLE_SLOTS where free, any other label the lowest free slot (so the first 8 labels
    look distinct); one label, one look, in every panel."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}

    def __call__(self, label: str) -> dict[str, object]:
        if label not in self.slots:
            taken = set(self.slots.values())
            slot = _role_slot(label)
            if slot is None or slot in taken:  # the lowest free: distinct looks first
                slot = next(i for i in range(len(taken) + 1) if i not in taken)
            self.slots[label] = slot
        return style.series(self.slots[label])


@lru_cache(maxsize=4096)
def text_in(text: str, size: float = MIN_FONT_PT) -> float:
    """Width in inches of ``text`` (its widest line) set at ``size`` pt in the style's font."""
    font = FontProperties(size=size)
    widths = [TextToPath().get_text_width_height_descent(line, font, ismath=False)[0]
              for line in str(text).split("\n")]
    return max(widths or [0.0]) / 72


def log2_threads(ax: Axes, counts: Sequence[int]) -> None:
    """A log2 thread axis labelled at the counts, thinned so that labels never touch."""
    ticks = sorted(set(int(c) for c in counts))
    if not ticks:
        return
    kept = [ticks[-1]]
    for t in reversed(ticks[:-1]):
        if kept[-1] / t >= 1.9:
            kept.append(t)
    kept.reverse()
    ax.set_xscale("log", base=2)
    ax.set_xticks(kept, [str(t) for t in kept])
    ax.set_xlim(ticks[0] / 1.4, ticks[-1] * 1.4)
    ax.minorticks_off()


def headed(title: str) -> Callable[[Figure, list[Axes]], None]:
    """A Grid's ``finish`` that sets ``title`` above the panels, wrapped to the figure's
    width (a one-column figure's title ran past its edge)."""
    def finish(fig: Figure, axes: list[Axes]) -> None:
        per_line = int(fig.get_size_inches()[0] / 0.062)  # 8 pt characters per line
        fig.suptitle(textwrap.fill(title, per_line))
    return finish


# --- heatmaps ---------------------------------------------------------------------------

@dataclass
class Heat:
    """One panel of a heatmap figure: values (NaN where none), the text of each cell, the
    row and column labels."""

    title: str
    grid: np.ndarray
    text: list[list[str]]
    rows: list[str]
    cols: list[str]


def norm_of(values: np.ndarray, log: bool | None = None) -> Normalize:
    """A log scale where the values span more than 10x (unless ``log`` says), else linear from 0."""
    values = values[np.isfinite(values) & (values > 0)]
    if values.size == 0:
        return Normalize(0, 1)
    wide = values.max() > 10 * values.min() if log is None else log
    if wide:
        return LogNorm(values.min(), max(values.max(), 1.01 * values.min()))
    return Normalize(0, values.max())


def heat_grid(heats: Sequence[Heat], colour_label: str, xlabel: str, ylabel: str,
              norm: Normalize | None = None, cmap: str = "viridis", title: str | None = None) -> tuple[Grid, bool]:
    """The panels wrapped into rows at page width, one colour scale and one colour bar for
    all (compare panels by colour), as a node report's figure (``page`` False). Each cell
    gets the room its 7 pt text needs; where a panel of such cells is wider than the page,
    or the figure taller than style.PAGE_HEIGHT_IN, the text is dropped and the colour bar
    alone gives the values. Returns (the layout, annotated)."""
    texts = [t for h in heats for row in h.text for t in row if t]
    lines = max((t.count("\n") + 1 for t in texts), default=1)
    text_w = max((text_in(t) for t in texts), default=0.2) + CELL_PAD_IN
    text_h = max(lines * MIN_FONT_PT / 72 * 1.3 + 0.06, 0.2)
    n_rows = max(len(h.rows) for h in heats)
    n_cols = max(len(h.cols) for h in heats)
    label_w = max(text_in(r) for h in heats for r in h.rows) + 0.3    # tick labels + axis label
    label_h = max(text_in(c) for h in heats for c in h.cols) + 0.35   # rotated column labels
    title_w = max(text_in(h.title, style.RC["axes.titlesize"]) for h in heats)
    title_h = 0.3
    # The axis names are centred on the cells: a panel of one or two cells is as wide and as
    # tall as they are (its name ran past the figure and into the next panel's).
    name_w, name_h = (text_in(name, style.RC["axes.labelsize"]) for name in (xlabel, ylabel))

    def layout(cell_w: float, cell_h: float) -> tuple[int, float, float]:
        panel_w = max(max(n_cols * cell_w, name_w) + label_w, title_w) + 0.15
        per_row = max(1, int(PAGE_IN // panel_w))
        panel_h = max(n_rows * cell_h, name_h) + label_h + title_h
        return per_row, panel_w, panel_h

    per_row, panel_w, panel_h = layout(text_w, text_h)
    rows = math.ceil(len(heats) / per_row)
    annotated = panel_w <= PAGE_IN and rows * panel_h + style.COLOUR_BAR_IN <= style.PAGE_HEIGHT_IN
    if not annotated:
        per_row, panel_w, panel_h = layout(BARE_CELL_IN, BARE_CELL_IN)
    width = COLUMN_IN if min(per_row, len(heats)) * panel_w <= COLUMN_IN else PAGE_IN
    norm = norm or norm_of(np.concatenate([h.grid.ravel() for h in heats]))

    def draw(ax: Axes, heat: Heat) -> None:
        image = ax.imshow(np.ma.masked_invalid(heat.grid), cmap=cmap, norm=norm, aspect="auto",
                          interpolation="nearest")
        if annotated:
            for (i, j), cell in np.ndenumerate(np.array(heat.text, dtype=object)):
                value = heat.grid[i, j]
                ax.text(j, i, cell, ha="center", va="center", fontsize=MIN_FONT_PT,
                        color=style.ink(image.cmap(image.norm(value))) if np.isfinite(value) else "black")
        ax.set_xticks(range(len(heat.cols)), heat.cols, rotation=90)
        ax.set_yticks(range(len(heat.rows)), heat.rows)
        ax.set(xlabel=xlabel, ylabel=ylabel, facecolor="0.9")
        ax.tick_params(length=2)

    def finish(fig: Figure, axes: list[Axes]) -> None:
        if axes:
            style.colour_bar(fig, axes[-1].images[0], axes, colour_label)
        if title:
            fig.suptitle(title)
    return Grid(list(heats), draw, lambda heat: heat.title, width, panel_h, per_row, finish, legend=False,
                page=False), annotated


def heat_cells(heats: Sequence[Heat], unit: str) -> pd.DataFrame:
    """Every cell of the panels (panel, row, column, value as ``unit``, text): a heat map's
    source data."""
    rows = [(h.title, r, c, h.grid[i, j], h.text[i][j])
            for h in heats for i, r in enumerate(h.rows) for j, c in enumerate(h.cols)]
    return pd.DataFrame(rows, columns=["panel", "row", "column", unit, "text"])


def colour_only(heats: Sequence[Heat], annotated: bool, where: str) -> str:
    """Where a heat map was drawn without its numbers, the caption's note saying so and
    that ``where`` (a file of the report, a Markdown link) holds them; '' where the cells
    carry their numbers."""
    if annotated:
        return ""
    cells = max(len(h.rows) for h in heats) * max(len(h.cols) for h in heats)
    return (f"{len(heats)} panel(s) of up to {cells} cells: too many to print each value at "
            f"{MIN_FONT_PT:g} pt within the page, so the cells show colour only (grey: not measured); "
            f"the colour bar gives the scale and {where}.")


def heat_text(value: float) -> str:
    """A cell's number: no decimals from 100 on, one below."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def bytes_axis(ax: Axes, sizes: Sequence[float]) -> None:
    """Log2 x axis of byte counts, at most four labelled powers of two (1 KiB, 1 MiB, ...
    where the range allows), so that 7 pt labels never touch on a narrow panel; the labels
    in the units the tables and captions use (results.transfers.size_label)."""
    ax.set_xscale("log", base=2)
    lo, hi = (int(math.log2(min(sizes))), int(math.ceil(math.log2(max(sizes))))) if len(sizes) else (0, 1)
    step = next(s for s in (1, 2, 5, 10, 20, 30, 40) if (hi - lo) // s < 4 or s == 40)
    first = lo + (-lo) % step if step >= 5 and (hi - lo) >= step else lo
    ticks = [2.0 ** e for e in range(first, hi + 1, step)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v).replace(" ", "\u2009")))
