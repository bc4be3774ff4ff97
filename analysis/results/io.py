"""Load mempath HDF5 result files (docs/schema.md) into pandas.

A table is a group of equal-length 1-D datasets, one per column (``bw/samples``,
``bw/cases``); strings are variable-length UTF-8 and come back as ``str``.

Files are read through h5file.walk, the one walk of a result file that the fleet and
compare read their columns through too (docs/schema.md, "Reading a result file").
"""
from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import workers
from .h5file import RunFileError, shown, unreadable, walk


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


def files_below(folder: Path, pattern: str = "*.h5", skip: Collection[str] = ()) -> list[Path]:
    """The files matching ``pattern`` below ``folder`` (recursively, sorted), but for those
    inside a subfolder named in ``skip`` (the fleet's `retest` pass)."""
    skipped = set(skip)
    return sorted(f for f in folder.rglob(pattern) if not skipped & set(f.relative_to(folder).parts[:-1]))


def result_files(paths: Sequence[Path], skip: Collection[str] = ()) -> list[Path]:
    """The one folder expander of every command: files as given, a folder standing for the
    .h5 files below it (files_below). Each command says in its own words when none is found."""
    files: list[Path] = []
    for path in paths:
        files.extend(files_below(path, "*.h5", skip) if path.is_dir() else [path])
    return files


def parse_topology(path: Path, value: Any) -> dict[str, Any]:
    """The ``topology`` attribute: a JSON object whose processors, memories and paths,
    where present, are lists of objects (what every reader of it indexes)."""
    try:
        topology = json.loads(str(value or "{}"))
    except json.JSONDecodeError as error:
        raise RunFileError(f"{shown(path)}: the topology attribute is not valid JSON ({error})") from None
    valid = "valid: a JSON object as `mempath topo --json` writes"
    if not isinstance(topology, dict):
        raise RunFileError(f"{shown(path)}: the topology attribute is JSON of type "
                           f"{type(topology).__name__}, not an object; {valid}")
    for key in ("processors", "memories", "paths"):
        items = topology.get(key, [])
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise RunFileError(f"{shown(path)}: the topology attribute's {key} is not a list "
                               f"of objects; {valid}")
        if key != "paths" and not all(isinstance(item.get("name"), str) and item["name"] for item in items):
            raise RunFileError(f"{shown(path)}: the topology attribute's {key} has an entry without "
                               f"a name; {valid}")
    return topology


def load_table(path: str | Path, name: str) -> pd.DataFrame:
    """One table of one file, e.g. ``load_table("run.h5", "bw/samples")``."""
    path = Path(path)
    with walk(path) as root:
        tables = {table.name: table for table in root.tables()}
        if name not in tables:
            raise RunFileError(f"{shown(path)}: no table {name}; tables: {', '.join(tables) or 'none'}")
        return pd.DataFrame(tables[name].table())


def load_run(path: str | Path, name: str | None = None) -> Run:
    """Every table of one file with its root attributes; ``topology`` parsed from JSON."""
    path = Path(path)
    with walk(path) as root:
        attrs = root.attributes()
        tables = {table.name: pd.DataFrame(table.table()) for table in root.tables()}
    return Run(path=path, name=name or path.stem, attrs=attrs,
               topology=parse_topology(path, attrs.get("topology")), tables=tables)


def _run_names(paths: Sequence[Path]) -> list[str]:
    """File stems, lengthened by parent folders where stems repeat (ReFrame's bw.h5)."""
    for depth in range(64):
        names = [shown("/".join([*(p.resolve().parent.parts[-depth:] if depth else ()), p.stem]))
                 for p in paths]
        if len(set(names)) == len(names):
            return names
    return [shown(p) for p in paths]


def node_facts(topology: Mapping[str, Any]) -> str:
    """What tells two machines of one host name apart (not sizes: they vary between runs)."""
    return json.dumps([topology.get("cpu_model"), topology.get("arch"),
                       [[p.get(k) for k in ("name", "model", "cores")]
                        for p in topology.get("processors", [])],
                       [[m.get("name"), m.get("kind")] for m in topology.get("memories", [])]])


def node_names(hosts: Sequence[str], facts: Sequence[str]) -> list[str]:
    """Per run: its host name, numbered (``#2``, ...) where one host name has several
    topologies (node_facts)."""
    seen: dict[str, list[str]] = {}
    names = []
    for host, fact in zip(hosts, facts):
        kinds = seen.setdefault(host, [])
        if fact not in kinds:
            kinds.append(fact)
        number = kinds.index(fact) + 1
        names.append(host if number == 1 else f"{host}#{number}")
    return names


def _name_nodes(runs: Sequence[Run]) -> None:
    """Set ``node``: the host name, numbered where one host name has several topologies."""
    names = node_names([run.host for run in runs], [node_facts(run.topology) for run in runs])
    for run, name in zip(runs, names):
        run.node = name


def _check_columns(run: Run, required: Mapping[str, Sequence[str]]) -> None:
    for table, columns in required.items():
        lacking = [c for c in columns if table in run.tables and c not in run.tables[table]]
        if lacking:
            raise RunFileError(f"{shown(run.path)}: table {table} lacks the column(s) "
                               f"{', '.join(lacking)}; valid: the columns of docs/schema.md")


def _usable(path: Path, name: str, required: Mapping[str, Sequence[str]]) -> Run:
    run = load_run(path, name)
    _check_columns(run, required)
    return run


def load_runs(paths: Iterable[str | Path], required: Mapping[str, Sequence[str]] | None = None,
              rejected: list[str] | None = None) -> RunSet:
    """Load several files; tables of the same name are concatenated across runs.

    ``required``: columns a table must have where a file holds it. ``rejected``: where
    given, a file that cannot be used adds one line to it instead of raising, so one bad
    file of thousands does not hide the rest; RunFileError only when no file is usable.
    """
    files = [Path(p) for p in paths]

    def read(chunk: Sequence[tuple[Path, str]]) -> list[Run | str]:
        answers: list[Run | str] = []
        for path, name in chunk:
            try:
                answers.append(_usable(path, name, required or {}))
            except RunFileError as error:
                answers.append(str(error))
        return answers

    def lost(unit: tuple[Path, str], why: str) -> list[Run | str]:
        return [unreadable(unit[0], why)]

    # In child processes (workers.py): a file on which libhdf5 crashes or hangs is one line.
    chunks = workers.read_all(read, list(zip(files, _run_names(files))), None, lost,
                              lambda parts: [answer for part in parts for answer in part])
    runs: list[Run] = []
    bad: list[str] = []
    for answer in (answer for chunk in chunks for answer in chunk):
        if isinstance(answer, Run):
            runs.append(answer)
        elif rejected is None:
            raise RunFileError(answer)
        else:
            bad.append(answer)
    if bad and not runs:
        if len(bad) == 1:
            raise RunFileError(bad[0])
        rejected += bad
        raise RunFileError(f"none of the {len(bad)} files is usable (each named above); "
                           "valid: mempath result files (docs/schema.md)")
    if rejected is not None:
        rejected += bad
    _name_nodes(runs)
    tables: dict[str, pd.DataFrame] = {}
    for table in dict.fromkeys(t for run in runs for t in run.tables):
        parts = [run.tables[table].assign(run=run.name, host=run.node)
                 for run in runs if table in run.tables]
        merged = pd.concat(parts, ignore_index=True)
        tables[table] = merged[["run", "host", *[c for c in merged if c not in ("run", "host")]]]
    return RunSet(runs=runs, tables=tables)
