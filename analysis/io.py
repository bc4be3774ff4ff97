"""Load mempath HDF5 result files (docs/schema.md) into pandas.

A table is a group of equal-length 1-D datasets, one per column (``bw/samples``,
``bw/cases``); strings are variable-length UTF-8 and come back as ``str``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from .errors import InputError

SCHEMA_VERSION = 1


class RunFileError(InputError):
    """A path that is not a readable mempath result file of a supported schema."""


@dataclass
class Run:
    """One result file: provenance attributes, the parsed topology and its tables.

    ``node`` names the machine in reports: the host name, with ``#2``, ``#3`` added by
    load_runs() where runs of one host name have different topologies (containers and
    VMs often share a host name).
    """

    path: Path
    name: str
    attrs: dict[str, Any]
    topology: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    node: str = ""

    def __post_init__(self) -> None:
        self.node = self.node or self.host

    @property
    def host(self) -> str:
        return str(self.attrs.get("host") or self.topology.get("host") or "unknown")


@dataclass
class RunSet:
    """Several runs, their tables concatenated with ``run`` and ``host`` (the node) first."""

    runs: list[Run]
    tables: dict[str, pd.DataFrame]

    def table(self, name: str, columns: Sequence[str] = ()) -> pd.DataFrame:
        """The concatenated table, or an empty one with ``columns`` when no run has it."""
        if name in self.tables:
            return self.tables[name]
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ("run", "host", *columns)})

    def hosts(self) -> list[str]:
        """The nodes of the runs, in the order of the runs."""
        return list(dict.fromkeys(run.node for run in self.runs))


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [_decode(v) for v in value.tolist()]
    return value


def _open(path: Path) -> h5py.File:
    """Open and validate: a mempath file of the schema version this package reads."""
    if not path.is_file():
        raise RunFileError(f"{path}: no such file")
    try:
        handle = h5py.File(path, "r")
    except OSError:
        raise RunFileError(f"{path}: not an HDF5 file; give a mempath result file (.h5)") from None
    version = handle.attrs.get("schema_version")
    if version is None or _decode(handle.attrs.get("tool", "mempath")) != "mempath":
        handle.close()
        raise RunFileError(f"{path}: not a mempath result file (no schema_version attribute)")
    if _decode(version) != SCHEMA_VERSION:
        handle.close()
        raise RunFileError(f"{path}: schema_version {_decode(version)} is not supported; "
                           f"this analysis reads schema_version {SCHEMA_VERSION}")
    return handle


def _column(dataset: h5py.Dataset) -> np.ndarray:
    if h5py.check_string_dtype(dataset.dtype) is not None:
        return np.asarray(dataset.asstr()[()], dtype=object)
    return np.asarray(dataset[()])


def _read_table(path: Path, group: h5py.Group) -> pd.DataFrame:
    columns = {name: _column(ds) for name, ds in group.items() if isinstance(ds, h5py.Dataset)}
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise RunFileError(f"{path}: table {group.name} has columns of different lengths")
    return pd.DataFrame(columns)


def _table_groups(handle: h5py.File) -> list[str]:
    """Names of the groups whose members are all datasets (the tables)."""
    names: list[str] = []

    def visit(name: str, obj: h5py.HLObject) -> None:
        if isinstance(obj, h5py.Group) and len(obj) > 0 and all(
                isinstance(member, h5py.Dataset) for member in obj.values()):
            names.append(name)

    handle.visititems(visit)
    return sorted(names)


def load_table(path: str | Path, name: str) -> pd.DataFrame:
    """One table of one file, e.g. ``load_table("run.h5", "bw/samples")``."""
    path = Path(path)
    with _open(path) as handle:
        group = handle.get(name)
        if not isinstance(group, h5py.Group):
            raise RunFileError(f"{path}: no table {name}; tables: "
                               f"{', '.join(_table_groups(handle)) or 'none'}")
        return _read_table(path, group)


def load_run(path: str | Path, name: str | None = None) -> Run:
    """Every table of one file with its root attributes; ``topology`` parsed from JSON."""
    path = Path(path)
    with _open(path) as handle:
        attrs = {key: _decode(value) for key, value in handle.attrs.items()}
        tables = {table: _read_table(path, handle[table]) for table in _table_groups(handle)}
    text = attrs.get("topology") or "{}"
    try:
        topology = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunFileError(f"{path}: the topology attribute is not valid JSON ({error})") from None
    return Run(path=path, name=name or path.stem, attrs=attrs, topology=topology, tables=tables)


def _run_names(paths: Sequence[Path]) -> list[str]:
    """File stems, lengthened by parent folders where stems repeat (ReFrame's bw.h5)."""
    for depth in range(64):
        names = ["/".join([*(p.resolve().parent.parts[-depth:] if depth else ()), p.stem])
                 for p in paths]
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in paths]


def _name_nodes(runs: Sequence[Run]) -> None:
    """Set ``node``: the host name, numbered where one host name has several topologies."""
    seen: dict[str, list[str]] = {}
    for run in runs:
        topo = run.topology
        facts = json.dumps([topo.get("cpu_model"), topo.get("arch"),  # not sizes: they vary
                            [[p.get(k) for k in ("name", "model", "cores")]
                             for p in topo.get("processors", [])],
                            [[m.get("name"), m.get("kind")] for m in topo.get("memories", [])]])
        kinds = seen.setdefault(run.host, [])
        if facts not in kinds:
            kinds.append(facts)
        number = kinds.index(facts) + 1
        run.node = run.host if number == 1 else f"{run.host}#{number}"


def load_runs(paths: Iterable[str | Path]) -> RunSet:
    """Load several files; tables of the same name are concatenated across runs."""
    files = [Path(p) for p in paths]
    runs = [load_run(p, name) for p, name in zip(files, _run_names(files))]
    _name_nodes(runs)
    tables: dict[str, pd.DataFrame] = {}
    for table in dict.fromkeys(t for run in runs for t in run.tables):
        parts = [run.tables[table].assign(run=run.name, host=run.node)
                 for run in runs if table in run.tables]
        merged = pd.concat(parts, ignore_index=True)
        tables[table] = merged[["run", "host", *[c for c in merged if c not in ("run", "host")]]]
    return RunSet(runs=runs, tables=tables)
