"""The one registry of what the node report and the paper draw: items (a figure, a table,
a report section), the one Context every builder is given, what a builder returns
(Drawn), and ``faceted``, the tail every faceted figure shares.

A module registers each builder with ``@item(...)``; ``registry(package)`` imports the
modules of a package once and returns its items in order, so adding an item touches its
own module only. The registry sits at the render layer so that the report and the paper,
which may not import each other, read one table of items.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .. import outfiles
from ..plugins import import_all
from ..model.peaks import PeakModel
from ..results.io import RunSet
from . import style

KINDS = ("figure", "table", "section")


@dataclass(frozen=True)
class Comparison:
    """One published value beside this run's: ``ratio`` = run / published."""

    item: str        # the item's key
    quantity: str    # what is compared, in words (processor, memory, operation)
    published: float
    run: float
    unit: str
    source: str      # where the published value is printed (document, figure or table)

    @property
    def ratio(self) -> float:
        return self.run / self.published if self.published and math.isfinite(self.run) else math.nan


@dataclass
class Drawn:
    """What a builder made: files (figure PNG+PDF or table MD+CSV), or why none."""

    files: list[Path] = field(default_factory=list)
    why_not: str = ""
    runs: list[str] = field(default_factory=list)      # names of the runs whose data it shows
    notes: list[str] = field(default_factory=list)     # caption lines (definitions, assumptions)
    table: list[str] = field(default_factory=list)     # Markdown lines of a table item
    comparisons: list[Comparison] = field(default_factory=list)
    supplementary: list[str] = field(default_factory=list)  # stems of the figure's other processors' pages


def supplementary_lines(stems: list[str], title: str) -> list[str]:
    """A figure's supplementary pages (its other processors), each embedded with its links."""
    return [line for i, stem in enumerate(stems, 1) for line in (
        f"![{title}, supplementary {i}]({stem}.png)", "", f"Supplementary {i}: {style.figure_links(stem)}, "
        f"[CSV]({stem}.csv)", "")]


@dataclass
class Context:
    """What every builder is given; the report fills the fields past ``models`` (its path
    matrix, its marked bw cases) before its sections run."""

    runs: RunSet
    out: Path
    topologies: Mapping[str, Mapping[str, Any]]   # host -> topology
    models: Mapping[str, Any]                     # host -> PeakModel
    entries: pd.DataFrame | None = None           # the report's path matrix entries
    cases: pd.DataFrame | None = None             # bw/cases with placement marked
    active_bytes: float = math.nan                # the report's LLM bytes per token
    many: bool = False                            # more than one node: name the host

    @classmethod
    def of(cls, runs: RunSet, out: Path, overrides: Mapping[str, float] | None = None) -> Context:
        """The Context of ``runs`` written into ``out``: each node's topology (its first run's)
        and peak model (``overrides``: the user's peaks)."""
        hosts = runs.hosts()
        topologies = {host: next(r.topology for r in runs.runs if r.node == host) for host in hosts}
        return cls(runs, out, topologies, {h: PeakModel(t, dict(overrides or {})) for h, t in topologies.items()},
                   many=len(hosts) > 1)

    def table(self, name: str) -> pd.DataFrame:
        return self.runs.table(name)

    def runs_of(self, frame: pd.DataFrame) -> list[str]:
        """The run names a frame's rows come from, in run order."""
        if frame.empty or "run" not in frame:
            return []
        used = set(frame["run"])
        return [run.name for run in self.runs.runs if run.name in used]

    def gpu_hosts(self) -> list[str]:
        """The nodes whose topology lists a GPU: only there can a hint name a GPU command
        (`mempath memcpy` refuses a node without one)."""
        return [host for host, topology in self.topologies.items()
                if any(p.get("kind") == "gpu" for p in topology.get("processors", []))]


@dataclass(frozen=True)
class Item:
    key: str          # file stem, named by what it shows
    ref: str          # the paper's number ("Fig. 7", "Table III"); '' for the report's own
    title: str        # a report section's heading
    kind: str         # KINDS
    tables: tuple[str, ...]   # HDF5 tables read (docs/schema.md)
    command: str      # what measures it (docs/paper.md has the check too)
    order: float
    build: Callable[[Context], Any]   # Drawn; a report section's Part
    module: str       # where it was registered: the package it belongs to (report, paper)


_ITEMS: dict[str, Item] = {}


def item(key: str, ref: str, title: str, kind: str, tables: tuple[str, ...], command: str, order: float
         ) -> Callable[[Callable[[Context], Any]], Callable[[Context], Any]]:
    """Register the decorated builder as the item ``key``."""
    if kind not in KINDS:
        raise ValueError(f"item {key}: kind {kind!r} is not one of {', '.join(KINDS)}")

    def register(build: Callable[[Context], Any]) -> Callable[[Context], Any]:
        if key in _ITEMS and _ITEMS[key].build.__qualname__ != build.__qualname__:
            raise ValueError(f"item {key} registered twice")
        _ITEMS[key] = Item(key, ref, title, kind, tables, command, order, build, build.__module__)
        return build
    return register


def registry(package: str) -> list[Item]:
    """The items registered by the modules of ``package`` (imported first), in order."""
    import_all(package)
    mine = [i for i in _ITEMS.values() if i.module.startswith(package + ".")]
    return sorted(mine, key=lambda i: (i.order, i.key))


def absent(runs: RunSet, item: Item) -> str:
    """Why an item cannot be drawn from these runs at all ('' when a table it reads is here).
    An item that names no table (the report's own figures, drawn from what its Context
    carries) says itself why it has nothing to draw."""
    if not item.tables or any(name in runs.tables and not runs.tables[name].empty for name in item.tables):
        return ""
    return f"no run holds {' or '.join('/' + t for t in item.tables)}; measured by `{item.command}`"


def draw(ctx: Context, item: Item) -> Drawn:
    """What ``item`` makes of ``ctx``: its builder's Drawn, or why not where no table it
    reads is in the runs. The paper and the report both draw an item through this."""
    why = absent(ctx.runs, item)
    return Drawn(why_not=why) if why else item.build(ctx)


# The marks each panel of a faceted figure drew, recorded by ``mark`` beside the drawing and
# written by ``faceted`` as the figure's source data.
_MARKS: WeakKeyDictionary[Axes, list[dict[str, Any]]] = WeakKeyDictionary()


def mark(ax: Axes, series: str, **columns: Any) -> None:
    """Record marks ``ax`` draws for the figure's source data (KEY.csv): one row per mark,
    ``series`` its legend entry, ``columns`` its x, y (and the bound it is drawn against),
    named by quantity; each a value or a sequence (one mark per element, scalars repeated)."""
    lengths = {len(v) for v in columns.values() if isinstance(v, (Sequence, np.ndarray, pd.Series, pd.Index))
               and not isinstance(v, str)}
    if len(lengths) > 1:
        raise ValueError(f"mark {series!r}: columns of lengths {sorted(lengths)}")
    count = lengths.pop() if lengths else 1

    def at(value: Any, i: int) -> Any:
        if isinstance(value, str) or not isinstance(value, (Sequence, np.ndarray, pd.Series, pd.Index)):
            return value
        return value.iloc[i] if isinstance(value, pd.Series) else value[i]
    _MARKS.setdefault(ax, []).extend({"series": series, **{k: at(v, i) for k, v in columns.items()}}
                                     for i in range(count))


def mark_cells(ax: Axes, series: str, grid: np.ndarray, rows: Sequence[str], columns: Sequence[str],
               names: tuple[str, str, str]) -> None:
    """Record each measured cell of a heat map (``grid``, NaN: none) as a mark: ``names``
    (the row's, the column's and the value's column) of ``rows[i]``, ``columns[j]``, the value."""
    for (i, j), value in np.ndenumerate(grid):
        if math.isfinite(value):
            mark(ax, series, **{names[0]: rows[i], names[1]: columns[j], names[2]: float(value)})


@dataclass
class Grid:
    """A faceted figure's layout: one panel per entry of ``panels``, each drawn by
    ``draw(ax, panel)`` and titled ``title(panel)``."""

    panels: Sequence[Any]
    draw: Callable[[Axes, Any], None]
    title: Callable[[Any], str] = str
    width: float = style.PAGE_IN
    panel_height: float | None = None
    max_cols: int = 3
    finish: Callable[[Figure, list[Axes]], None] | None = None  # after the legend: colour bars, fitting
    legend: bool = True
    legend_title: str | None = None
    title_size: float | None = None   # the panels' titles, where smaller than the style's
    # What the figure's caption, comparisons and omissions read from the data or the drawing:
    # ``caption()`` is called once the panels are drawn and stands in place of faceted's caption
    # and notes (which then stand only where nothing is drawn).
    caption: Callable[[], Sequence[str]] | None = None
    comparisons: Sequence[Comparison] = ()
    why_not: str = ""
    # (host, processor) a panel shows: the panels of the processors the paper shows (the first
    # Grace and the first Hopper of each node, shown()) make the main figure, the others the
    # supplementary pages; None: every panel is the main figure's.
    processor: Callable[[Any], tuple[str, str]] | None = None
    processor_column: str = "pu"   # the column of ``faceted``'s csv rows that names the processor
    page: bool = True   # checked as a journal page's (style.save); False: a node report's, which may run longer


def _number(name: str) -> int:
    digits = "".join(c for c in name if c.isdigit())
    return int(digits) if digits else 0


def shown(processors: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """Of (host, processor) pairs, those the paper shows of a symmetric node: on each host
    the lowest-numbered CPU and the lowest-numbered GPU (cpu0 and gpu0 where measured)."""
    first: dict[tuple[str, str], tuple[str, str]] = {}
    for host, pu in processors:
        kind = "gpu" if pu.startswith("gpu") else "cpu"
        if (host, kind) not in first or _number(pu) < _number(first[(host, kind)][1]):
            first[(host, kind)] = (host, pu)
    return set(first.values())


def _split(layout: Grid) -> tuple[list[Any], list[Any]]:
    """The main figure's panels and the supplementary ones, in the grid's order."""
    if layout.processor is None:
        return list(layout.panels), []
    owners = [layout.processor(p) for p in layout.panels]
    main = shown(owners)
    return ([p for p, o in zip(layout.panels, owners) if o in main],
            [p for p, o in zip(layout.panels, owners) if o not in main])


def _figure(layout: Grid, panels: Sequence[Any]) -> tuple[Figure, list[Axes]]:
    """``panels`` of ``layout`` drawn, titled, the legend below and the grid's finish."""
    kwargs = {} if layout.panel_height is None else {"panel_height": layout.panel_height}
    fig, axes = style.panels(len(panels), layout.width, max_cols=layout.max_cols, **kwargs)
    for ax, panel in zip(axes, panels):
        layout.draw(ax, panel)
        size = {} if layout.title_size is None else {"fontsize": layout.title_size}
        ax.set_title(layout.title(panel), **size)
    if layout.legend:
        style.legend_below(fig, axes, title=layout.legend_title)
    if layout.finish is not None:
        layout.finish(fig, axes)
    return fig, axes


def _fitted(layout: Grid, panels: list[Any]) -> tuple[Figure, list[Axes], list[Any], list[list[Any]]]:
    """``panels`` drawn (``_figure``), and where a page figure came out taller than a page,
    drawn again with only the rows one page holds: the figure, its axes, the panels drawn
    and the pages of those left over."""
    fig, axes = _figure(layout, panels)
    if not layout.page or fig.get_figheight() <= style.PAGE_HEIGHT_IN + 1e-6:
        return fig, axes, panels, []
    pages = _pages(layout, panels, _fixed(layout, fig, axes))
    if len(pages) < 2:
        return fig, axes, panels, []
    for ax in axes:
        _MARKS.pop(ax, None)
    plt.close(fig)
    fig, axes = _figure(layout, pages[0])
    return fig, axes, pages[0], pages[1:]


def _fixed(layout: Grid, fig: Figure, axes: Sequence[Axes]) -> float:
    """The height a figure took besides its rows of panels (titles, legend, colour bar)."""
    rows = len({ax.get_subplotspec().rowspan.start for ax in axes})
    return fig.get_figheight() - rows * (layout.panel_height or style.PANEL_IN)


def _pages(layout: Grid, panels: Sequence[Any], fixed_in: float) -> list[list[Any]]:
    """``panels`` cut into pages that each fit a journal page's height (style.PAGE_HEIGHT_IN):
    as many rows of the grid's columns as fit beside ``fixed_in``, the height the main
    figure took besides its panels (titles, legend, colour bar)."""
    if not panels:
        return []
    cols = max(1, min(len(panels), int(layout.width // style.MIN_PANEL_IN), layout.max_cols))
    per = cols * max(1, int((style.PAGE_HEIGHT_IN - fixed_in) // (layout.panel_height or style.PANEL_IN)))
    return [list(panels[i:i + per]) for i in range(0, len(panels), per)]


def faceted(ctx: Context, key: str, data: pd.DataFrame, why_empty: str, grid: Callable[[pd.DataFrame], Grid],
            notes: Sequence[str] = (), caption: Sequence[str] = (), runs: Sequence[str] | None = None,
            csv: tuple[pd.DataFrame, Sequence[str]] | None = None, why_not: str = "",
            comparisons: Sequence[Comparison] = ()) -> Drawn:
    """The one tail of a faceted figure: nothing but ``why_empty`` (and ``notes``) where
    ``data`` is empty; else the panels of ``grid(data)``, each titled, the legend below,
    the main figure's rows that one page holds (the others, and the supplementary
    processors', on pages of their own: ``key``_supplementary),
    saved (style.save checks the style), the source data as ``key``.csv (``csv``: the
    rows, the columns kept; else the marks the panels recorded, ``mark``, under their
    panel's title), the caption (``caption`` then ``notes``; the grid's own where it builds
    one from the data), the runs (``runs``, else those of ``data``), what was left out
    (``why_not``, else the grid's) and the ``comparisons`` (then the grid's)."""
    if data.empty:
        return Drawn(why_not=why_empty, notes=list(notes))
    layout = grid(data)
    main, rest = _split(layout)
    todo, stems, files, over = [main], [key], [], []
    for index, stem in enumerate(stems):  # grows once the main figure is drawn: its supplementary pages
        if stem == key:
            fig, axes, main, over = _fitted(layout, main)
            pages = over + _pages(layout, rest, _fixed(layout, fig, axes))
            todo += pages
            stems += [f"{key}_supplementary" + (f"_{i + 1}" if len(pages) > 1 else "") for i in range(len(pages))]
        else:
            fig, axes = _figure(layout, todo[index])
        panels = main if stem == key else todo[index]
        marks = [{"panel": " ".join(ax.get_title().split()) or f"panel {i + 1}", **row}
                 for i, ax in enumerate(axes) for row in _MARKS.pop(ax, [])]
        files += style.save(fig, ctx.out, stem, page=layout.page)
        path = ctx.out / f"{stem}.csv"
        if csv is not None:
            kept, columns = csv
            if layout.processor is not None and {"host", layout.processor_column} <= set(kept):
                mine = {layout.processor(p) for p in panels}
                kept = kept[[(h, pu) in mine for h, pu in zip(kept["host"], kept[layout.processor_column])]]
            outfiles.write_csv(kept[[c for c in columns if c in kept]], path)
        else:
            outfiles.write_csv(pd.DataFrame(marks), path)
        files.append(path)
    lines = [*caption, *notes] if layout.caption is None else list(layout.caption())
    if over:
        left = [p for page in over for p in page]
        lines.append(f"One page holds {len(main)} of the main figure's panels; "
                     + (f"those of {_names(left, layout)}" if layout.processor is not None else "the others")
                     + f" are drawn alike in {', '.join(f'`{s}.png`' for s in stems[1:1 + len(over)])}.")
    if rest:
        lines.append(f"The main figure shows the panels of {_names(main, layout)}, as the paper shows one Grace and "
                     f"one Hopper of a symmetric node; those of the other processors ({_names(rest, layout)}) are "
                     f"drawn alike in {', '.join(f'`{s}.png`' for s in stems[1 + len(over):])}.")
    return Drawn(files=files, notes=lines, runs=list(ctx.runs_of(data) if runs is None else runs),
                 why_not=why_not or layout.why_not, comparisons=[*comparisons, *layout.comparisons],
                 supplementary=stems[1:])


def _names(panels: Sequence[Any], layout: Grid) -> str:
    assert layout.processor is not None
    owners = list(dict.fromkeys(layout.processor(p) for p in panels))
    several = len({h for h, _ in owners}) > 1
    return ", ".join(f"{h}:{pu}" if several else pu for h, pu in owners)
