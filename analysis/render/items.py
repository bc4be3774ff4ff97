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
    """Why an item cannot be drawn from these runs at all ('' when a table it reads is here)."""
    if any(name in runs.tables and not runs.tables[name].empty for name in item.tables):
        return ""
    return f"no run holds {' or '.join('/' + t for t in item.tables)}; measured by `{item.command}`"


def draw(ctx: Context, item: Item) -> Drawn:
    """What ``item`` makes of ``ctx``: its builder's Drawn, or why not where no table it
    reads is in the runs. The paper and the report both draw an item through this."""
    why = absent(ctx.runs, item)
    return Drawn(why_not=why) if why else item.build(ctx)


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


def faceted(ctx: Context, key: str, data: pd.DataFrame, why_empty: str, grid: Callable[[pd.DataFrame], Grid],
            notes: Sequence[str] = (), caption: Sequence[str] = (), runs: Sequence[str] | None = None,
            csv: tuple[pd.DataFrame, Sequence[str]] | None = None) -> Drawn:
    """The one tail of a faceted figure: nothing but ``why_empty`` (and ``notes``) where
    ``data`` is empty; else the panels of ``grid(data)``, each titled, the legend below,
    saved (style.save checks the style), the source data as ``key``.csv (``csv``: the
    rows, the columns kept), the caption (``caption`` then ``notes``) and the runs
    (``runs``, else those of ``data``)."""
    if data.empty:
        return Drawn(why_not=why_empty, notes=list(notes))
    layout = grid(data)
    kwargs = {} if layout.panel_height is None else {"panel_height": layout.panel_height}
    fig, axes = style.panels(len(layout.panels), layout.width, max_cols=layout.max_cols, **kwargs)
    for ax, panel in zip(axes, layout.panels):
        layout.draw(ax, panel)
        ax.set_title(layout.title(panel))
    if layout.legend:
        style.legend_below(fig, axes)
    if layout.finish is not None:
        layout.finish(fig, axes)
    files = style.save(fig, ctx.out, key)
    if csv is not None:
        rows, columns = csv
        path = ctx.out / f"{key}.csv"
        outfiles.write_csv(rows[[c for c in columns if c in rows]], path)
        files.append(path)
    return Drawn(files=files, notes=[*caption, *notes], runs=list(ctx.runs_of(data) if runs is None else runs))
