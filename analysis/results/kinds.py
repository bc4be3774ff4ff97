"""Allocator, memory and processor kinds, read from the C++ table itself.

src/core/kinds.def is the one copy: C++ includes it as X-macros (src/core/kinds.hpp) and
this module parses the same rows, so the two cannot drift (tests/cpp/test_kinds.cpp runs
``python -m analysis.results.kinds`` and compares its output with the C++ table). Usage::

    from analysis.results.kinds import ALLOCATORS
    ALLOCATORS["pinned"]["page_locked"]  # True
"""
from __future__ import annotations

import json
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


def load(path: Path = KINDS_DEF) -> dict[str, dict[str, dict]]:
    """{"alloc"|"mem"|"pu": {name: {column: value}}}, each in table order."""
    table: dict[str, dict[str, dict]] = {"alloc": {}, "mem": {}, "pu": {}}
    for macro, args in deffile.rows(path, {m: len(c) + 1 for m, c in _COLUMNS.items()}):
        row = dict(zip(_COLUMNS[macro], map(deffile.literal, args[1:])))
        table[macro.lower()][row["name"]] = row
    return table


_TABLE = load()
ALLOCATORS = _TABLE["alloc"]
MEMORY_KINDS = _TABLE["mem"]
PROCESSOR_KINDS = _TABLE["pu"]


def rows(table: dict[str, dict[str, dict]] | None = None) -> dict[str, list[dict]]:
    """The table as lists in table order (the form tests/cpp/test_kinds.cpp compares)."""
    return {family: list(by_name.values()) for family, by_name in (table or _TABLE).items()}


if __name__ == "__main__":
    print(json.dumps(rows(), indent=1))
