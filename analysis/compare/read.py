"""The columns compare needs from BASE and RUN, read from thousands of files at once.

A nightly fleet is tens of thousands of small files on each side, and opening and reading
them is most of compare's time (each HDF5 dataset read costs about 0.1 ms here, whatever
its size). So, as the fleet does (analysis/fleet/load.py), child processes read chunks
of files through h5py's low-level calls and return numpy columns, never DataFrames; and
only the columns a comparison uses are read: a family's identity columns (its
configuration: integers and strings that are not outcomes; once per plan, _PLANS),
``case_id``, ``status``, ``reason`` (only where a case is not ok) and the metric with its
sample keys. Validation
of each file is io's (``result_file``); a file that cannot be used is one line.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import InputError
from ..results import workers
from ..results.io import (RunFileError, attribute, check_non_negative, node_facts, node_names,
                          parse_topology, read_column, result_file, result_files, shown,
                          unreadable)
from .families import DERIVED, FAMILIES, OUTCOMES

#: Per process: column kinds seen per (family, column). A float column is an outcome (a
#: figure, never configuration), so after the first file it is not even opened.
_KINDS: dict[tuple[str, str], str] = {}
#: Per process: root groups seen without a cases table (inventory, ...), not opened again.
_NOT_FAMILIES: set[str] = set()
#: Per process: io.node_facts and the host of each topology text seen. The files of one
#: node share one topology, and parsing it (tens of KB of JSON) cost more than a table.
_FACTS: dict[str, tuple[str, str]] = {}
#: The compared figures (each family's metric): numbers.
FIGURES = {spec.metric for spec in FAMILIES.values()}
#: Per process: a family's identity columns by the plan that made them. A case's identity
#: (its configuration) is what mempath planned: a function of the binary, its command line
#: (less where it wrote) and the node's topology (less its host name). A fleet's nodes run
#: one command on one kind of node, so after the first file of a plan the others' identity
#: columns are not read again (a 4-family file holds ~40 of them; reading them was two
#: thirds of compare's time at 10,000 files a side). Anything that differs (another binary,
#: option, topology, table layout or row count) is another plan, read in full.
_PLANS: dict[tuple, dict[str, np.ndarray]] = {}
#: Per process: topology text -> the same without the host name (the plan's input).
_PLAN_TOPOLOGY: dict[str, str] = {}
#: Options that say where or how a run wrote, not what it measured.
_NOT_PLAN_OPTIONS = {"--output": 1, "--overwrite": 0, "--progress": 0, "--no-progress": 0, "--timeout": 1}


@dataclass
class Table:
    """One table of one family over many files: columns concatenated in file order, the
    row count of each file (0 where it lacks the table), and which files hold each column."""

    rows: list[int] = field(default_factory=list)
    columns: dict[str, list[tuple[int, np.ndarray]]] = field(default_factory=dict)
    made: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, repr=False)

    def add(self, columns: Mapping[str, np.ndarray], rows: int) -> None:
        self.made.clear()
        position = len(self.rows)
        self.rows.append(rows)
        for name, values in columns.items():
            self.columns.setdefault(name, []).append((position, values))

    def skip(self) -> None:
        self.made.clear()
        self.rows.append(0)

    def extend(self, other: Table) -> None:
        self.made.clear()
        offset = len(self.rows)
        self.rows.extend(other.rows)
        for name, parts in other.columns.items():
            self.columns.setdefault(name, []).extend((offset + p, v) for p, v in parts)

    def files(self) -> np.ndarray:
        """The file (position) of each row."""
        return np.repeat(np.arange(len(self.rows)), self.rows)

    def present(self, name: str) -> np.ndarray:
        """Per file: whether it holds column ``name`` (files without the table count as holding it)."""
        held = np.asarray(self.rows) == 0
        held[[p for p, _ in self.columns.get(name, [])]] = True
        return held

    def column(self, name: str, fill: Any = None) -> np.ndarray:
        """Column ``name`` over every row; ``fill`` in the rows of files that lack it (made
        once: the comparison asks for some columns several times)."""
        key = (name, repr(fill))
        if key not in self.made:
            made = self._column(name, fill)
            made.flags.writeable = False  # shared by every caller
            self.made[key] = made
        return self.made[key]

    def _column(self, name: str, fill: Any) -> np.ndarray:
        parts = dict(self.columns.get(name, []))
        arrays = [parts[p] if p in parts else np.full(n, fill, dtype=object)
                  for p, n in enumerate(self.rows) if n]
        if not arrays:
            return np.array([], dtype=object)
        kinds = {a.dtype.kind for a in arrays}
        if len(kinds) > 1 or "O" in kinds:
            return np.concatenate([a.astype(object) for a in arrays])
        return np.concatenate(arrays)


@dataclass
class Side:
    """BASE or RUN: per usable file its name and node, per family its cases and samples."""

    files: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # per file: io.node_facts of its topology
    cases: dict[str, Table] = field(default_factory=lambda: {f: Table() for f in FAMILIES})
    samples: dict[str, Table] = field(default_factory=lambda: {f: Table() for f in FAMILIES})
    unknown: dict[str, int] = field(default_factory=dict)  # cases tables compare does not know
    rejected: list[str] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)

    def extend(self, other: Side) -> None:
        self.files += other.files
        self.hosts += other.hosts
        self.facts += other.facts
        self.paths += other.paths
        for family in FAMILIES:
            self.cases[family].extend(other.cases[family])
            self.samples[family].extend(other.samples[family])
        for name, count in other.unknown.items():
            self.unknown[name] = self.unknown.get(name, 0) + count
        self.rejected += other.rejected


def read_side(files: Sequence[Path], jobs: int | None = None) -> Side:
    """Every file's columns (read_chunk), in file order, read by ``jobs`` child processes
    (results/workers.py: a file on which the HDF5 library crashes or hangs is one line)."""
    def lost(path: Path, why: str) -> Side:
        side = Side()
        side.rejected.append(unreadable(path, why))
        return side

    side = _merged(workers.read_all(read_chunk, files, jobs, lost, _merged))
    side.hosts = node_names(side.hosts, side.facts)  # as io.load_runs names nodes
    return side


def _merged(parts: Sequence[Side]) -> Side:
    side = Side()
    for part in parts:
        side.extend(part)
    return side


def read_chunk(files: Sequence[Path]) -> Side:
    """The compare columns of some files; an unusable file is one line in ``rejected``."""
    side = Side()
    for path in files:
        try:
            host, facts, cases, samples, unknown = _read_file(Path(path))
        except RunFileError as error:
            side.rejected.append(str(error))
            continue
        side.files.append(shown(path))
        side.paths.append(Path(path))
        side.hosts.append(host)
        side.facts.append(facts)
        for family in FAMILIES:
            for tables, read in ((side.cases, cases), (side.samples, samples)):
                if family in read:
                    tables[family].add(*read[family])
                else:
                    tables[family].skip()
        for name in unknown:
            side.unknown[name] = side.unknown.get(name, 0) + 1
    return side


Read = dict[str, tuple[dict[str, np.ndarray], int]]


def _names(group: Any) -> list[bytes]:
    """The link names of a group, in one pass (iterating a GroupID looks each up by index)."""
    names: list[bytes] = []
    group.links.iterate(names.append)
    return names


def _read_file(path: Path) -> tuple[str, str, Read, Read, list[str]]:
    with result_file(path) as fid:
        try:
            host = str(attribute(fid, "host")) if h5py.h5a.exists(fid, b"host") else ""
            text = str(attribute(fid, "topology")) if h5py.h5a.exists(fid, b"topology") else "{}"
            known = _FACTS.get(text)
            if known is None:  # refused as every reader refuses it
                topology = parse_topology(path, text)
                if len(_FACTS) > 1024:
                    _FACTS.clear()
                known = _FACTS[text] = (node_facts(topology), str(topology.get("host") or ""))
            facts, topology_host = known
            plan = _plan_of(fid, text)
            cases: Read = {}
            samples: Read = {}
            unknown = []
            for raw in _names(fid):
                name = raw.decode()
                if name in _NOT_FAMILIES:
                    continue
                family = h5py.h5o.open(fid, raw)
                held = set(_names(family)) if isinstance(family, h5py.h5g.GroupID) else set()
                if b"cases" not in held:
                    if name not in FAMILIES:  # inventory and the like
                        _NOT_FAMILIES.add(name)
                    continue
                if name not in FAMILIES:
                    unknown.append(name)
                    continue
                cases[name] = _cases(path, name, h5py.h5g.open(family, b"cases"), plan)
                if FAMILIES[name].table == "samples" and b"samples" in held:
                    samples[name] = _samples(path, name, h5py.h5g.open(family, b"samples"))
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            # h5py reports damaged objects inside a readable file with any of these.
            raise RunFileError(f"{shown(path)}: cannot be read ({error}); the file is damaged, "
                               "give an intact mempath result file") from None
    return str(host or topology_host or "unknown"), facts, cases, samples, unknown


def _plan_of(fid: Any, topology_text: str) -> tuple | None:
    """What made the file's cases: its binary, command line less where it wrote, and
    topology less the host name; None where a part is missing (read everything)."""
    words = []
    for name in (b"tool_version", b"git_revision", b"command_line"):
        if not h5py.h5a.exists(fid, name):
            return None
        words.append(str(attribute(fid, name.decode())))
    argv, kept, skip = words[2].split(" "), [], 0
    for word in argv[1:]:  # argv[0]: the binary's path, which may differ from node to node
        if skip:
            skip -= 1
        elif word in _NOT_PLAN_OPTIONS:
            skip = _NOT_PLAN_OPTIONS[word]
        else:
            kept.append(word)
    topology = _PLAN_TOPOLOGY.get(topology_text)
    if topology is None:
        try:
            parsed = json.loads(topology_text)
        except ValueError:
            return None
        if isinstance(parsed, dict):
            parsed.pop("host", None)
        if len(_PLAN_TOPOLOGY) > 1024:
            _PLAN_TOPOLOGY.clear()
        topology = _PLAN_TOPOLOGY[topology_text] = json.dumps(parsed, sort_keys=True)
    return words[0], words[1], " ".join(kept), topology


def _lacking(path: Path, table: str, held: set[bytes], wanted: Sequence[str]) -> None:
    lacking = [c for c in wanted if c.encode() not in held]
    if lacking:
        raise RunFileError(f"{shown(path)}: table {table} lacks the column(s) {', '.join(lacking)}; "
                           "valid: the columns of docs/schema.md")


def _column(table: str, group: Any, name: str) -> np.ndarray:
    return read_column(h5py.h5o.open(group, name.encode()), f"{table}/{name}")


def _same_length(path: Path, table: str, columns: Mapping[str, np.ndarray]) -> int:
    """The table's row count; also checks that ``case_id`` is an integer and any figure a
    number (a string there would make the comparison itself fail)."""
    for name, values in columns.items():
        numeric = "iu" if name == "case_id" else "iuf" if name in FIGURES else ""
        if numeric and values.dtype.kind not in numeric:
            raise RunFileError(f"{shown(path)}: column {name} of table {table} holds "
                               f"{'text' if values.dtype.kind in 'OSU' else values.dtype}; valid: "
                               f"{'integers' if name == 'case_id' else 'numbers'} (docs/schema.md)")
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise RunFileError(f"{shown(path)}: table {table} has columns of different lengths")
    return lengths.pop() if lengths else 0


#: Per family: the cases columns that are never identity (outcomes, derived), as link names.
_NOT_IDENTITY = {family: {n.encode() for n in (OUTCOMES | DERIVED).difference(spec.identity)}
                 for family, spec in FAMILIES.items()}


def _cases(path: Path, family: str, group: Any, plan: tuple | None) -> tuple[dict[str, np.ndarray], int]:
    """case_id, status, every identity column (those of an earlier file of the same plan:
    _PLANS), reason where a case is not ok, and the metric where the family's figure is in
    its cases table (nccl)."""
    table = f"{family}/cases"
    spec = FAMILIES[family]
    names = _names(group)
    wanted = ["case_id", "status", "reason"] + ([spec.metric] if spec.table == "cases" else [])
    _lacking(path, table, set(names), wanted)
    columns = {name: _column(table, group, name) for name in wanted if name != "reason"}
    key = None if plan is None else (*plan, family, tuple(names), len(columns["case_id"]))
    known = _PLANS.get(key) if key else None
    if known is not None:
        columns.update(known)
    else:
        identity = {}
        skipped = _NOT_IDENTITY[family]
        for raw in names:
            if raw in skipped:
                continue
            name = raw.decode()
            if name in columns or _KINDS.get((family, name)) == "f":
                continue
            dataset = h5py.h5o.open(group, raw)
            kind = "f" if isinstance(dataset, h5py.h5d.DatasetID) and dataset.dtype.kind in "fc" else ""
            _KINDS[(family, name)] = kind
            if not kind:
                identity[name] = read_column(dataset, f"{table}/{name}")
        columns.update(identity)
        if key and {len(v) for v in identity.values()} <= {len(columns["case_id"])}:
            if len(_PLANS) > 256:
                _PLANS.clear()
            _PLANS[key] = identity
    rows = _same_length(path, table, columns)
    if len(np.unique(columns["case_id"])) != rows:
        raise RunFileError(f"{shown(path)}: table {table} names a case_id twice; valid: one row a case")
    if (columns["status"] != "ok").any():
        reason = _column(table, group, "reason")
        if len(reason) != rows:
            raise RunFileError(f"{shown(path)}: table {table} has columns of different lengths")
        columns["reason"] = reason
    if spec.table == "cases":
        check_non_negative(path, table, spec.metric, columns[spec.metric])
    return columns, rows


def _samples(path: Path, family: str, group: Any) -> tuple[dict[str, np.ndarray], int]:
    table = f"{family}/samples"
    spec = FAMILIES[family]
    held = set(_names(group))
    _lacking(path, table, held, ("case_id", spec.metric))
    names = ["case_id", spec.metric, *[k for k in spec.sample_keys if k.encode() in held]]
    columns = {name: _column(table, group, name) for name in names}
    rows = _same_length(path, table, columns)
    check_non_negative(path, table, spec.metric, columns[spec.metric])
    if b"time_s" in held:  # the measured time the metric comes from: a negative one is a broken file
        check_non_negative(path, table, "time_s", _column(table, group, "time_s"))
    return columns, rows


def files_of(path: Path) -> list[Path]:
    """BASE or RUN: the file, or every .h5 file below the folder."""
    if path.is_dir():
        found = result_files([path])
        if not found:
            raise InputError(f"{shown(path)} holds no .h5 result files; valid: a mempath .h5 file or a folder of them")
        return found
    if not path.exists():
        raise InputError(f"{shown(path)} does not exist; valid: a mempath .h5 file or a folder of them")
    return [path]
