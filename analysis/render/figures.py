"""Helpers every figure of the node report and the fleet shares, on top of the one style
(style.py: widths, fonts, palette, legends, the check ``save`` runs), and the report's two
bandwidth figures (thread scaling, copy heatmap).

- Figures are written by ``style.save``, called through the module (tests patch that one
  name), the one way a figure is written (PNG at 300 dpi and PDF, checked).
- ``Styles``: a series style per legend label, the same role (``local HBM``) in the same
  look in every figure.
- ``heatmaps``: panels of annotated cells wrapped into rows at page width; annotation (7 pt)
  only where the cells can carry it, else the colour bar alone (``Files.note`` says so).
- ``Files``: the files a figure was written to, with the note its caption needs.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from .. import outfiles
from . import style
from .style import COLUMN_IN, MIN_FONT_PT, PAGE_IN  # noqa: F401 (re-exported)
from ..model.roles import ROLE_ORDER, role
from ..results.cases import best, by_threads, ordered, unmeasured

OPS = ("read", "write", "copy")
#: A series slot per memory role, in roles.ROLE_ORDER (the paper's order: local before
#: peer), so that a role looks the same in every figure; DDR (x86) shares LPDDR's slot.
ROLE_SLOTS = tuple(r for r in ROLE_ORDER if "DDR" not in r or "LPDDR" in r)
CELL_PAD_IN = 0.1       # room around a cell's text
BARE_CELL_IN = 0.14     # a cell without text


class Files(list):
    """The files a figure was written to (empty: not drawn), with ``note``: what its
    caption must add (what the figure leaves out and where to find it)."""

    def __init__(self, paths: Sequence[Path] = (), note: str = ""):
        super().__init__(paths)
        self.note = note


def _role_slot(label: str) -> int | None:
    """The ROLE_SLOTS place of a label that starts with a role (``local HBM, managed``)."""
    head = label.split(",")[0].split(" →")[0].strip().replace("LPDDR", "DDR").replace("DDR", "LPDDR")
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


def role_rank(label: str) -> int:
    """Sort key: memory roles first, in roles.ROLE_ORDER (a legend reads local, then peer)."""
    slot = _role_slot(label)
    return len(ROLE_SLOTS) if slot is None else slot


def role_label(topology: Mapping[str, Any] | None, pu: str, mem: str) -> str:
    """The memory's role seen from ``pu`` (``local HBM``), its name where no role is known:
    the label a series takes in a figure whose panels are processors."""
    return (role(topology, pu, mem) if topology else "") or mem


def topologies(runs: Any) -> dict[str, Mapping[str, Any]]:
    """host -> topology of a RunSet (the first run of each node)."""
    found: dict[str, Mapping[str, Any]] = {}
    for run in getattr(runs, "runs", []):
        found.setdefault(run.node, run.topology)
    return found


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


def finish(fig: Figure, axes: Sequence[Axes], title: str | None = None) -> None:
    """The legend below the panels and, where given, the figure's title, wrapped to the
    figure's width (a one-column figure's title ran past its edge)."""
    style.legend_below(fig, axes)
    if title:
        per_line = int(fig.get_size_inches()[0] / 0.062)  # 8 pt characters per line
        fig.suptitle(textwrap.fill(title, per_line))


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


def heatmaps(heats: Sequence[Heat], colour_label: str, xlabel: str, ylabel: str,
             norm: Normalize | None = None, cmap: str = "viridis",
             title: str | None = None) -> tuple[Figure, list[Axes], bool]:
    """The panels wrapped into rows at page width, one colour scale and one colour bar for
    all (compare panels by colour). Each cell gets the room its 7 pt text needs; where a
    panel of such cells is wider than the page, or the figure taller than style.PAGE_HEIGHT_IN, the
    text is dropped and the colour bar alone gives the values. Returns (figure, axes,
    annotated)."""
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
    fig, axes = style.panels(len(heats), width=width, panel_height=panel_h, max_cols=per_row)
    grids = np.concatenate([h.grid.ravel() for h in heats])
    norm = norm or norm_of(grids)
    image = None
    for ax, heat in zip(axes, heats):
        image = ax.imshow(np.ma.masked_invalid(heat.grid), cmap=cmap, norm=norm, aspect="auto",
                          interpolation="nearest")
        if annotated:
            for (i, j), cell in np.ndenumerate(np.array(heat.text, dtype=object)):
                value = heat.grid[i, j]
                ax.text(j, i, cell, ha="center", va="center", fontsize=MIN_FONT_PT,
                        color=style.ink(image.cmap(image.norm(value))) if np.isfinite(value) else "black")
        ax.set_xticks(range(len(heat.cols)), heat.cols, rotation=90)
        ax.set_yticks(range(len(heat.rows)), heat.rows)
        ax.set(xlabel=xlabel, ylabel=ylabel, title=heat.title, facecolor="0.9")
        ax.tick_params(length=2)
    if image is not None:
        style.colour_bar(fig, image, axes, colour_label)
    if title:
        fig.suptitle(title)
    return fig, axes, annotated


def cell_table(heats: Sequence[Heat], annotated: bool, out: Path, stem: str, unit: str,
               elsewhere: str = "") -> tuple[list[Path], str]:
    """Where a heatmap was drawn without its numbers: the caption's note saying so and
    where the numbers are: ``elsewhere`` (a file of the report that has them), else
    ``stem``.csv, written here with every cell (panel, row, column, value, text). Nothing
    where the cells carry their numbers."""
    if annotated:
        return [], ""
    cells = max(len(h.rows) for h in heats) * max(len(h.cols) for h in heats)
    note = (f"{len(heats)} panel(s) of up to {cells} cells: too many to print each value at "
            f"{MIN_FONT_PT:g} pt within the page, so the cells show colour only (grey: not measured); "
            "the colour bar gives the scale and ")
    if elsewhere:
        return [], note + f"{elsewhere} the numbers."
    rows = [(h.title, r, c, h.grid[i, j], h.text[i][j])
            for h in heats for i, r in enumerate(h.rows) for j, c in enumerate(h.cols)]
    path = out / f"{stem}.csv"
    outfiles.write_csv(pd.DataFrame(rows, columns=["panel", "row", "column", unit, "text"]), path)
    return [path], note + f"[{path.name}]({path.name}) every cell."


def heat_text(value: float) -> str:
    """A cell's number: no decimals from 100 on, one below."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


# --- the report's bandwidth figures -----------------------------------------------------

def thread_scaling(cases: pd.DataFrame, out: Path, topologies: Mapping[str, Mapping[str, Any]] | None = None,
                   with_host: bool = False) -> Files:
    """GB/s against CPU threads: one panel per CPU and op (read, write, copy), one line per
    memory (copy: source -> destination) labelled by its role seen from that CPU; each point
    the best allocator at that thread count (median, band min-max). Paths measured at one
    thread count only (copies at all cores) have no scaling to show: the path matrix and
    the copy heatmap give them. Returns the files written; none without a swept CPU path."""
    topologies = topologies or {}
    keys = ["host", "op", "pu", "mem", "dst_mem"]
    points = by_threads(cases[cases["pu_kind"] == "cpu"], keys)
    if points.empty:
        return Files()
    points = points.groupby(keys, sort=False, dropna=False).filter(lambda g: g["threads"].nunique() > 1)
    if points.empty:
        return Files()
    pus = {host: [p["name"] for p in t.get("processors", [])] for host, t in topologies.items()}
    panels = [(host, pu, op) for host in ordered(points["host"], list(topologies))
              for pu in ordered(points.loc[points["host"] == host, "pu"], pus.get(host, []))
              for op in ordered(points.loc[(points["host"] == host) & (points["pu"] == pu), "op"], OPS)]
    fig, axes = style.panels(len(panels), PAGE_IN if len(panels) > 1 else COLUMN_IN, max_cols=3)
    styles = Styles()
    for ax, (host, pu, op) in zip(axes, panels):
        part = points[(points["host"] == host) & (points["pu"] == pu) & (points["op"] == op)]
        topology = topologies.get(host)
        lines = [(role_label(topology, pu, mem) + (f" → {role_label(topology, pu, str(dst))}" if dst else ""), line)
                 for (_, _, _, mem, dst), line in part.groupby(keys, sort=False, dropna=False)]
        for label, line in sorted(lines, key=lambda item: role_rank(item[0])):
            look = styles(label)
            threads = line["threads"].astype(int).to_numpy()
            ax.plot(threads, line["median_GBps"].astype(float), label=label, **look)
            ax.fill_between(threads, line["min_GBps"].astype(float), line["max_GBps"].astype(float),
                            color=look["color"], alpha=0.15, linewidth=0)
        log2_threads(ax, part["threads"])
        style.from_zero(ax)
        ax.grid(True)
        ax.set(title=f"{host}: {pu} {op}" if with_host else f"{pu} {op}", xlabel="CPU threads",
               ylabel="GB/s (median)")
    finish(fig, axes)
    return Files(style.save(fig, out, "thread_scaling", page=False),
                 "Lines: memories by their role seen from the CPU of the panel (memories of one role, "
                 "such as the peer nodes, share a look); band: min-max of the repetitions.")


def copy_heatmap(cases: pd.DataFrame, out: Path, mem_order: Sequence[str] = (),
                 topologies: Mapping[str, Mapping[str, Any]] | None = None,
                 with_host: bool = False) -> Files:
    """One panel per PU: source (row, labelled with its role seen from that PU) x
    destination memory (column, by name: the row labels map names to roles), median GB/s
    of the best copy case; one colour scale for all panels. Cells of copies
    that did not run say why (skipped, failed). Returns the files written; none when no
    copy case measured a path."""
    topologies = topologies or {}
    copies = cases[cases["op"] == "copy"]
    top = best(copies, ["host", "pu", "mem", "dst_mem"])
    if top.empty:
        return Files()
    pus = {host: [p["name"] for p in t.get("processors", [])] for host, t in topologies.items()}
    panels = [(host, pu) for host in ordered(top["host"], list(topologies))
              for pu in ordered(top.loc[top["host"] == host, "pu"], pus.get(host, []))]
    heats = []
    for host, pu in panels:
        mine = copies[(copies["host"] == host) & (copies["pu"] == pu)]
        srcs, dsts = ordered(mine["mem"], mem_order), ordered(mine["dst_mem"], mem_order)
        grid = np.full((len(srcs), len(dsts)), np.nan)
        text = [[""] * len(dsts) for _ in srcs]
        for (src, dst), group in mine.groupby(["mem", "dst_mem"]):
            i, j = srcs.index(src), dsts.index(dst)
            ran = best(group, ["mem", "dst_mem"])
            if ran.empty:
                text[i][j] = unmeasured(group)[0]
            else:
                grid[i, j] = float(ran["median_GBps"].iloc[0])
                text[i][j] = heat_text(grid[i, j])
        topology = topologies.get(host)
        heats.append(Heat(f"{host}: {pu}" if with_host else pu, grid, text,
                          [labelled_or_name(topology, pu, m) for m in srcs], dsts))
    fig, _, annotated = heatmaps(heats, "GB/s (median; bytes read + written)", "destination memory",
                                 "source memory", title="copy: median GB/s of the best case")
    files = style.save(fig, out, "copy_heatmap", page=False)
    table, note = cell_table(heats, annotated, out, "copy_heatmap", "median_GBps")
    return Files(files + table, note)


def labelled_or_name(topology: Mapping[str, Any] | None, pu: str, mem: str) -> str:
    """``local HBM (numa4)``: roles.labelled, the name alone without a topology."""
    r = role(topology, pu, mem) if topology else ""
    return f"{r} ({mem})" if r else mem
