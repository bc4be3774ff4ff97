"""Write a mempath result file (docs/schema.md) from Python, as src/core/results.cpp does:
root attributes (int64 or variable-length UTF-8 strings), one group per table
(``bw/cases``), one contiguous 1-D dataset per column (int64, float64 or variable-length
UTF-8 strings) with a ``units`` string attribute ("" where the column has none).

Like the C++ writer the file appears whole or not at all: it is written to a new file
beside it (outfiles.replacing: never through a link planted there), synced and renamed
over ``path``. Used by the LLM script, slurm/inventory.py, the fleet
simulator and the test fixtures, so that every writer of the schema shares one reader's
expectations (tests/python/test_h5writer.py compares it with the C++ binary's file).
"""
from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import outfiles
from . import families

SCHEMA_VERSION = 1
KINDS = (int, float, str)


class Column(NamedTuple):
    """One column: its name, int, float or str, its units ("" for none) and its values."""

    name: str
    kind: type
    units: str
    values: Iterable[Any]


def units_of(name: str) -> str:
    """The unit src/core/families.def gives a column named ``name`` (one a name, whatever its
    table), as the C++ writer writes it; "" for none and for a name the table lacks."""
    return families.UNITS.get(name, "")


def column(name: str, values: Iterable[Any], kind: type | None = None) -> Column:
    """A Column with the units of its name; ``kind`` from a numpy array's dtype where not given."""
    return Column(name, kind or kind_of(np.asarray(values)), units_of(name), values)


#: The Python kind of each column type of src/core/families.def.
KIND_OF_TYPE = {"Int": int, "Float": float, "String": str}


def table_columns(table: str, rows: Sequence[Mapping[str, Any]]) -> list[Column]:
    """``rows`` (dicts by column name) as the columns of ``table`` ("llm/cases") that
    src/core/families.def lists: their names, order, kinds and units, as the C++ writer's."""
    return [Column(c.name, KIND_OF_TYPE[c.type], c.unit, [r[c.name] for r in rows])
            for c in families.columns(table)]


def _h5py():
    import h5py  # here, not at import: the LLM script on a GPU node needs it only to save
    return h5py


def kind_of(values: np.ndarray) -> type:
    """int, float or str for a numpy array's dtype (bool counts as int, like the C++ 0/1)."""
    kind = np.asarray(values).dtype.kind
    if kind in "iub":
        return int
    if kind == "f":
        return float
    return str


def _data(column: Column) -> np.ndarray:
    h5py = _h5py()
    if column.kind not in KINDS:
        raise TypeError(f"column {column.name}: kind {column.kind!r}; valid: int, float or str")
    if column.kind is str:
        return np.array([str(v) for v in column.values], dtype=h5py.string_dtype("utf-8"))
    return np.asarray(list(column.values) if not isinstance(column.values, np.ndarray)
                      else column.values, dtype=np.int64 if column.kind is int else np.float64)


def _attribute(target: Any, name: str, value: Any) -> None:
    h5py = _h5py()
    if isinstance(value, str):
        target.attrs.create(name, value, dtype=h5py.string_dtype("utf-8"))
    elif isinstance(value, (bool, int, np.integer)):
        target.attrs.create(name, int(value), dtype=np.int64)
    else:
        raise TypeError(f"attribute {name}: {type(value).__name__}; valid: int or str")


def write_result(path: str | Path, attributes: Mapping[str, Any],
                 tables: Mapping[str, Sequence[Column]], update: bool = False,
                 sync: bool = True) -> Path:
    """Write ``attributes`` (schema_version 1 added where absent) and ``tables`` to ``path``.

    ``tables`` maps a table name (``"llm/cases"``) to its columns; every column of a table
    must have the same length. ``update``: where ``path`` exists, keep its attributes and
    tables and replace only the tables (and attributes) given, still through a new file.
    ``sync=False`` skips the fsync: for the simulator's hundred thousand throwaway files.
    """
    h5py = _h5py()
    path = Path(path)
    updating = update and path.exists()
    # outfiles.replacing: a new file beside PATH (a planted PATH.tmp link is never opened),
    # fsynced unless sync=False, then os.replace.
    with outfiles.replacing(path, sync=sync) as tmp:
        if updating:
            shutil.copyfile(path, tmp)
        with h5py.File(tmp, "a" if updating else "w") as handle:
            defaults = {} if updating else {"schema_version": SCHEMA_VERSION}
            for name, value in {**defaults, **attributes}.items():
                if name in handle.attrs:
                    del handle.attrs[name]
                _attribute(handle, name, value)
            for table, columns in tables.items():
                if table in handle:
                    del handle[table]
                group = handle.require_group(table)
                data = [(column, _data(column)) for column in columns]
                if len({len(values) for _, values in data}) > 1:
                    raise ValueError(f"table {table}: columns of different lengths")
                for column, values in data:
                    dataset = group.create_dataset(column.name, data=values, shape=(len(values),))
                    _attribute(dataset, "units", column.units)
    return path
