"""The report's sections: what each one returns (Part), what it is given (Context), and
the one table of sections (name, heading, the HDF5 tables it reads, its builder).

A section module registers its builder with ``@section(...)``; registry() imports every
module of the package once and returns the sections in report order, so adding a
section touches its own module only.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..plugins import import_all
from ..results.io import RunSet


@dataclass
class Part:
    """Files written, what is missing (and why), notes, and the summary.md lines."""

    files: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_figure(self, stem: str, title: str, files: list[Path], why_not: str) -> None:
        """Embed a drawn figure in the summary lines, or say why it was not drawn; its
        caption note (``files.note``, render.figures.Files) goes under it."""
        self.files += files
        if files:
            self.lines += figure_lines(stem, title, note=getattr(files, "note", ""))
        else:
            self.missing.append(f"{title} not drawn: {why_not}")


def figure_lines(stem: str, title: str, why_not: str | None = None, note: str = "") -> list[str]:
    """A figure's summary lines: the PNG embedded with links and its caption note, or why
    it was not drawn."""
    if why_not is not None:
        return [f"### {title}", "", f"_Not drawn: {why_not}._", ""]
    return ([f"### {title}", "", f"![{title}]({stem}.png)", "", f"[PNG]({stem}.png), [PDF]({stem}.pdf)", ""]
            + ([note, ""] if note else []))


def ok(table: pd.DataFrame) -> pd.DataFrame:
    """The finished cases of a table (none where it has no status column)."""
    return table[table["status"] == "ok"] if "status" in table else table.iloc[0:0]


@dataclass
class Context:
    """What the report has built before the sections run, shared by all of them."""

    runs: RunSet
    out: Path
    topologies: Mapping[str, Mapping[str, Any]]
    models: Mapping[str, Any]  # host -> PeakModel
    entries: pd.DataFrame  # the path matrix entries (matrix.entries)
    cases: pd.DataFrame  # bw/cases with placement marked
    active_bytes: float
    many: bool  # more than one node: figures and tables name the host

    def gpu_hosts(self) -> list[str]:
        """The nodes whose topology lists a GPU: only there can a hint name a GPU command
        (`mempath memcpy` refuses a node without one)."""
        return [host for host, topology in self.topologies.items() if has_gpu(topology)]


def has_gpu(topology: Mapping[str, Any]) -> bool:
    return any(p.get("kind") == "gpu" for p in topology.get("processors", []))


@dataclass(frozen=True)
class Section:
    """One row of the table: ``heading`` goes above the lines where the part has any."""

    name: str
    heading: str
    tables: tuple[str, ...]  # the HDF5 tables it reads (docs/schema.md)
    order: int  # place in summary.md
    build: Callable[[Context], Part]


_SECTIONS: dict[str, Section] = {}


def section(name: str, heading: str, tables: tuple[str, ...], order: int
            ) -> Callable[[Callable[[Context], Part]], Callable[[Context], Part]]:
    """Register the decorated builder as the report section ``name``."""
    def register(build: Callable[[Context], Part]) -> Callable[[Context], Part]:
        if name in _SECTIONS and _SECTIONS[name].build.__qualname__ != build.__qualname__:
            raise ValueError(f"report section {name} registered twice")
        _SECTIONS[name] = Section(name, heading, tables, order, build)
        return build
    return register


def registry() -> list[Section]:
    """Every registered section in report order (the package's modules imported first)."""
    import_all(__name__.rpartition(".")[0])
    return sorted(_SECTIONS.values(), key=lambda s: s.order)
