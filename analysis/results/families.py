"""Result families and the columns of their tables, read from the C++ table itself.

src/core/families.def is the one copy: C++ includes it as X-macros (src/core/families.hpp)
and creates its HDF5 tables from it; this module parses the same rows, so the two cannot
drift (tests/cpp/test_families.cpp compares its reading with the C++ table). A family that
shares another's tables (a SHARES row) is read as the copy it stands for. Usage::

    from analysis.results.families import FAMILIES, columns, required
    FAMILIES["chase"].metric              # "ns_per_access"
    [c.name for c in columns("stream/samples")]  # ["case_id", "rep", "time_s", "bandwidth_GBps"]
    named("bw/cases", "outcome")                 # ("status", "reason", "reps", ...)
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from . import deffile

FAMILIES_DEF = deffile.find("families.def")


class Family(NamedTuple):
    """One family (the HDF5 group of its tables) and its headline figure."""

    name: str
    what: str               # the family in words, for output
    metric: str             # the headline column
    unit: str
    higher_is_better: bool
    metric_table: str       # "samples" (one value a repetition) or "cases"
    cases_metric: str       # the cases table's median of the metric; "" where none
    words: str              # a case in words, "{column}" templates (model/case_words.py); "" for a path's family


class Column(NamedTuple):
    """One column of a table: its type is "Int", "Float" or "String" as in C++."""

    name: str
    type: str
    unit: str               # "" for none
    required: bool          # every reader needs it (results/schema.py REQUIRED)
    role: str               # one of ROLES: what the column is to compare
    fleet: str              # one of FLEET: how the fleet table names a case by it


# Field names after the macro's name, in its argument order (families.def's header says why
# each exists); the column rows start with their table's name.
_FIELDS = {"FAMILY": Family._fields, "COLUMN": ("table", *Column._fields),
           "SHARES": ("family", "source", "required")}
_TYPES = ("Int", "Float", "String")
#: A column's roles, as families.def's header defines them.
ROLES = ("key", "identity", "derived", "outcome")
#: How the fleet table reads a column (families.def's header).
FLEET = ("name", "name if present", "")
_VALID = {"role": ROLES, "fleet": FLEET}


def _value(text: str, field: str):
    if field == "type":
        if text not in _TYPES:
            raise ValueError(f"column type {text!r}; valid: {', '.join(_TYPES)}")
        return text
    value = deffile.literal(text)
    if field in _VALID and value not in _VALID[field]:
        raise ValueError(f"column {field} {value!r}; valid: {', '.join(map(repr, _VALID[field]))}")
    return value


class Table(NamedTuple):
    """The file read: families by name and each table's columns, both in table order."""

    families: dict[str, Family]
    tables: dict[str, tuple[Column, ...]]


def load(path: Path = FAMILIES_DEF) -> Table:
    families: dict[str, Family] = {}
    tables: dict[str, list[Column]] = {}
    for kind, args in deffile.rows(path, {m: len(f) for m, f in _FIELDS.items()}):
        values = [_value(a, f) for a, f in zip(args, _FIELDS[kind])]
        if kind == "FAMILY":
            families[values[0]] = Family(*values)
        elif kind == "SHARES":
            tables.update(_shared(path, tables, *values))
        else:
            tables.setdefault(values[0], []).append(Column(*values[1:]))
    return Table(families, {name: tuple(cols) for name, cols in tables.items()})


def _shared(path: Path, tables: dict[str, list[Column]], family: str, source: str,
            required: bool) -> dict[str, list[Column]]:
    """The tables a SHARES row gives ``family``: every table of ``source`` read so far."""
    shared = {f"{family}/{name.partition('/')[2]}": [c if required else c._replace(required=False) for c in cols]
              for name, cols in tables.items() if name.partition("/")[0] == source}
    if not shared:
        raise ValueError(f"{path}: {family} shares the tables of {source!r}, which has none above the row; "
                         "valid: a family whose columns come first")
    return shared


_TABLE = load()
#: Every family mempath, mempath-mpi and the LLM script write, by name, in table order.
FAMILIES: dict[str, Family] = _TABLE.families
#: Every table's name ("bw/cases", "chase/caches", "mpi_bw/ranks", ...), in table order.
TABLES: tuple[str, ...] = tuple(_TABLE.tables)


def columns(table: str) -> tuple[Column, ...]:
    """The columns of ``table`` ("stream/cases") in the writer's order; KeyError naming the
    valid tables for any other."""
    try:
        return _TABLE.tables[table]
    except KeyError:
        raise KeyError(f"no table {table!r} in {FAMILIES_DEF.name}; valid: {', '.join(TABLES)}") from None


def required(table: str) -> tuple[str, ...]:
    """The names of the columns every reader of ``table`` needs, in the writer's order."""
    return tuple(c.name for c in columns(table) if c.required)


def named(table: str, *roles: str) -> tuple[str, ...]:
    """The names of ``table``'s columns of any of ``roles`` (ROLES), in the writer's order."""
    return tuple(c.name for c in columns(table) if c.role in roles)


def _units() -> dict[str, str]:
    found: dict[str, str] = {}
    for table, cols in _TABLE.tables.items():
        for c in cols:
            if found.setdefault(c.name, c.unit) != c.unit:
                raise ValueError(f"{FAMILIES_DEF.name}: column {c.name} of {table} in {c.unit!r}, elsewhere in "
                                 f"{found[c.name]!r}; valid: one unit a name")
    return found


#: Every column name's unit ("" for none): one a name, whatever its table.
UNITS: dict[str, str] = _units()


def rows(table: Table | None = None) -> dict[str, list[dict]]:
    """The table as lists in table order (the form tests/cpp/test_families.cpp compares)."""
    t = table or _TABLE
    return {"families": [f._asdict() for f in t.families.values()],
            "columns": [{"table": name, **c._asdict()} for name, cols in t.tables.items() for c in cols]}


if __name__ == "__main__":
    print(json.dumps(rows(), indent=1))
