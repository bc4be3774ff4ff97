"""The paper's figures and tables as a registry: what each one is (its key, the paper's
number, its title, the HDF5 tables it reads, the command that measures them) and what its
builder returns (files, why not drawn, the runs it used, published-vs-run rows).

A module of this package registers each builder with ``@item(...)``; ``registry()`` imports
every module once and returns the items in the paper's order."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..plugins import import_all
from ..results.io import RunSet


@dataclass(frozen=True)
class Comparison:
    """One published value beside this run's: ``ratio`` = run / published."""

    item: str        # the paper item's key
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
    """What every builder is given."""

    runs: RunSet
    out: Path
    topologies: Mapping[str, Mapping[str, Any]]   # host -> topology
    models: Mapping[str, Any]                     # host -> PeakModel

    def table(self, name: str) -> pd.DataFrame:
        return self.runs.table(name)

    def runs_of(self, frame: pd.DataFrame) -> list[str]:
        """The run names a frame's rows come from, in run order."""
        if frame.empty or "run" not in frame:
            return []
        used = set(frame["run"])
        return [run.name for run in self.runs.runs if run.name in used]


@dataclass(frozen=True)
class Item:
    key: str          # file stem, named by what it shows
    ref: str          # the paper's number: "Fig. 7", "Table III"
    title: str
    kind: str         # "figure" or "table"
    tables: tuple[str, ...]   # HDF5 tables read (docs/schema.md)
    command: str      # what measures it (docs/paper.md has the check too)
    order: float      # the paper's order
    build: Callable[[Context], Drawn]


_ITEMS: dict[str, Item] = {}


def item(key: str, ref: str, title: str, kind: str, tables: tuple[str, ...], command: str,
         order: float) -> Callable[[Callable[[Context], Drawn]], Callable[[Context], Drawn]]:
    """Register the decorated builder as the paper item ``key``."""
    if kind not in ("figure", "table"):
        raise ValueError(f"paper item {key}: kind {kind!r} is not figure or table")

    def register(build: Callable[[Context], Drawn]) -> Callable[[Context], Drawn]:
        if key in _ITEMS and _ITEMS[key].build.__qualname__ != build.__qualname__:
            raise ValueError(f"paper item {key} registered twice")
        _ITEMS[key] = Item(key, ref, title, kind, tables, command, order, build)
        return build
    return register


def registry() -> list[Item]:
    """Every registered item in the paper's order (this package's modules imported first)."""
    import_all(__name__.rpartition(".")[0])
    return sorted(_ITEMS.values(), key=lambda i: (i.order, i.key))
