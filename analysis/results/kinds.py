"""Allocator, memory and processor kinds, read from the C++ table itself.

src/core/kinds.def is the one copy: C++ includes it as X-macros (src/core/kinds.hpp) and
this module parses the same rows, so the two cannot drift (tests/cpp/test_kinds.cpp runs
``python -m analysis.results.kinds`` and compares its output with the C++ table). Usage::

    from analysis.results.kinds import ALLOCATORS, ALLOC_ORDER
    ALLOCATORS["pinned"]["page_locked"]  # True
    ALLOC_ORDER                          # ("system", "numa", "pinned", ...): how figures list them
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from . import deffile

KINDS_DEF = deffile.find("kinds.def")

# Column names after the enum, in the macro's argument order (kinds.def's header says why
# each exists).
_COLUMNS = {
    "ALLOC": ("name", "api", "letter", "gpu_owned", "pageable", "page_locked", "host_touched",
              "gpu_memory", "needs_cuda"),
    "MEM": ("name", "numa_node"),
    "PU": ("name",),
}

#: What a copy engine or an SM sees of an allocator's pages, from the host's pageable pages
#: to the GPU's own memory: the order in which figures, tables and the ReFrame sweeps list
#: allocators (a class at a time, each in kinds.def's order).
COPY_CLASSES = ("pageable", "pagelocked", "managed", "device")


def load(path: Path = KINDS_DEF) -> dict[str, dict[str, dict]]:
    """{"alloc"|"mem"|"pu": {name: {column: value}}}, each in table order."""
    table: dict[str, dict[str, dict]] = {"alloc": {}, "mem": {}, "pu": {}}
    for macro, args in deffile.rows(path, {m: len(c) + 1 for m, c in _COLUMNS.items()}):
        row = dict(zip(_COLUMNS[macro], map(deffile.literal, args[1:])))
        table[macro.lower()][row["name"]] = row
    return table


def copy_class(alloc: Mapping[str, object]) -> str:
    """The COPY_CLASSES entry of an allocator's row, from its columns: pageable host pages,
    page-locked host pages, memory that migrates (managed), the GPU's own (device)."""
    if alloc["pageable"]:
        return "pageable"
    if alloc["page_locked"]:
        return "pagelocked"
    return "device" if alloc["gpu_owned"] else "managed"


_TABLE = load()
ALLOCATORS = _TABLE["alloc"]
MEMORY_KINDS = _TABLE["mem"]
PROCESSOR_KINDS = _TABLE["pu"]
#: Each allocator's COPY_CLASSES entry: pageable, pagelocked, managed or device.
ALLOC_CLASS = {name: copy_class(row) for name, row in ALLOCATORS.items()}
#: Every allocator, a class of ALLOC_CLASS at a time: the order figures and tables list them.
ALLOC_ORDER = tuple(sorted(ALLOCATORS, key=lambda name: COPY_CLASSES.index(ALLOC_CLASS[name])))


def rows(table: dict[str, dict[str, dict]] | None = None) -> dict[str, list[dict]]:
    """The table as lists in table order (the form tests/cpp/test_kinds.cpp compares)."""
    return {family: list(by_name.values()) for family, by_name in (table or _TABLE).items()}


if __name__ == "__main__":
    print(json.dumps(rows(), indent=1))
