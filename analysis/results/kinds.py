"""Allocator, memory and processor kinds, read from the C++ table itself.

src/core/kinds.def is the one copy: C++ includes it as X-macros (src/core/kinds.hpp) and
this module parses the same rows, so the two cannot drift (tests/cpp/test_kinds.cpp runs
``python -m analysis.results.kinds`` and compares its output with the C++ table). Usage::

    from analysis.results.kinds import ALLOCATORS
    ALLOCATORS["pinned"]["page_locked"]  # True
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

# The table in a source tree, else the copy `pip install` puts under the prefix or the
# --target folder (pyproject.toml's data-files): the same file, never a second one.
_HERE = Path(__file__).resolve().parent
_CANDIDATES = (_HERE.parents[1] / "src" / "core" / "kinds.def",
               Path(sys.prefix) / "share" / "mempath" / "kinds.def",
               _HERE.parents[1] / "share" / "mempath" / "kinds.def")
KINDS_DEF = next((p for p in _CANDIDATES if p.is_file()), _CANDIDATES[0])

# Column names after the enum, in the macro's argument order (kinds.def's header says why
# each exists).
_COLUMNS = {
    "ALLOC": ("name", "api", "letter", "gpu_owned", "pageable", "page_locked", "host_touched",
              "gpu_memory", "needs_cuda"),
    "MEM": ("name", "numa_node"),
    "PU": ("name",),
}
_ROW = re.compile(r"^MEMPATH_(ALLOC|MEM|PU)\((.*)\)\s*$")


def _value(text: str):
    text = text.strip()
    if text[0] in "\"'":
        return ast.literal_eval(text)
    return bool(int(text))


def load(path: Path = KINDS_DEF) -> dict[str, dict[str, dict]]:
    """{"alloc"|"mem"|"pu": {name: {column: value}}}, each in table order."""
    table: dict[str, dict[str, dict]] = {"alloc": {}, "mem": {}, "pu": {}}
    for line in path.read_text().splitlines():
        match = _ROW.match(line.strip())
        if not match:
            continue
        family, args = match.group(1), match.group(2).split(",")
        columns = _COLUMNS[family]
        if len(args) != len(columns) + 1:
            raise ValueError(f"{path}: {line.strip()!r} has {len(args)} fields; valid: {len(columns) + 1}")
        row = dict(zip(columns, (_value(a) for a in args[1:])))
        table[family.lower()][row["name"]] = row
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
