"""The X-macro tables C++ compiles (src/core/kinds.def, families.def), read as text: one
row per line, ``MEMPATH_<MACRO>(field, field, ...)``, no commas inside strings. Python
needs no generator step and no build tree, and reads the very file C++ includes."""
from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]


def find(name: str) -> Path:
    """The table in a source tree, else the copy `pip install` puts under the prefix or the
    --target folder (pyproject.toml's data-files): the same file, never a second one."""
    candidates = (_ROOT / "src" / "core" / name, Path(sys.prefix) / "share" / "mempath" / name,
                  _ROOT / "share" / "mempath" / name)
    return next((p for p in candidates if p.is_file()), candidates[0])


def rows(path: Path, fields: Mapping[str, int]) -> Iterator[tuple[str, list[str]]]:
    """(macro, its fields as text) of each row of the macros named in ``fields`` (macro ->
    field count); ValueError for a row of another count."""
    pattern = re.compile(rf"^MEMPATH_({'|'.join(fields)})\((.*)\)\s*$")
    for line in path.read_text().splitlines():
        match = pattern.match(line.strip())
        if match:
            macro, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
            if len(args) != fields[macro]:
                raise ValueError(f"{path}: {line.strip()!r} has {len(args)} fields; valid: {fields[macro]}")
            yield macro, args


def literal(text: str) -> str | bool:
    """A quoted field as its string, a 0/1 field as a bool."""
    return ast.literal_eval(text) if text[0] in "\"'" else bool(int(text))
