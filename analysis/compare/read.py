"""The columns compare needs from BASE and RUN, read from thousands of files at once.

A nightly fleet is tens of thousands of small files on each side, and opening and reading
them is most of compare's time (each HDF5 dataset read costs about 0.1 ms here, whatever
its size). So, as the fleet does (analysis/fleet/load.py), child processes read chunks
of files through h5py's low-level calls and return numpy columns, never DataFrames; and
only the columns a comparison uses are read: a family's identity columns (its
configuration: integers and strings that are not outcomes; once per plan, _PLANS),
``case_id``, ``status``, ``reason`` (only where a case is not ok) and the metric with its
sample keys. Each file is read through the one walk of a result file (results/h5file.py),
which validates it; a file that cannot be used is one line.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..model import causes
from ..results import conditions, workers
from ..results.h5file import Group, RunFileError, check_non_negative, shown, unreadable, walk
from ..results.io import node_facts, node_names, parse_topology, result_files
from .families import FAMILIES, not_identity

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
#: Beside a family's cases columns: each case's causes (analysis/model/causes.py, a list;
#: None where its file recorded no conditions for it). Never part of a case's identity.
CAUSES = "conditions_causes"
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


def _read_file(path: Path) -> tuple[str, str, Read, Read, list[str]]:
    with walk(path) as root:
        host = str(root.attribute("host", ""))
        text = str(root.attribute("topology", "{}"))
        known = _FACTS.get(text)
        if known is None:  # refused as every reader refuses it
            topology = parse_topology(path, text)
            if len(_FACTS) > 1024:
                _FACTS.clear()
            known = _FACTS[text] = (node_facts(topology), str(topology.get("host") or ""))
        facts, topology_host = known
        plan = _plan_of(root, text)
        recorded = _conditions(root, path, text)
        cases: Read = {}
        samples: Read = {}
        unknown = []
        for raw in root.names():
            name = raw.decode()
            if name in _NOT_FAMILIES:
                continue
            family = root.group(name)
            if family is None or not family.has("cases"):
                if name not in FAMILIES:  # inventory and the like
                    _NOT_FAMILIES.add(name)
                continue
            if name not in FAMILIES:
                unknown.append(name)
                continue
            cases[name] = _cases(family.group("cases"), plan)
            if recorded is not None:
                ids = cases[name][0]["case_id"].tolist()
                found = np.empty(len(ids), dtype=object)
                for row, case_id in enumerate(ids):
                    found[row] = causes.case_causes(recorded, int(case_id), name)
                cases[name][0][CAUSES] = found
            if FAMILIES[name].table == "samples" and family.has("samples"):
                samples[name] = _samples(family.group("samples"))
    return str(host or topology_host or "unknown"), facts, cases, samples, unknown


def _conditions(root: Group, path: Path, topology_text: str) -> conditions.Conditions | None:
    """The file's recorded conditions (results/conditions.py); None where it has none."""
    if not root.has_attribute("nvml"):
        return None
    attrs = {key: root.attribute(key) for key in conditions.ATTRIBUTES if root.has_attribute(key)}
    return conditions.of_group(root, attrs, parse_topology(path, topology_text))


def _plan_of(root: Group, topology_text: str) -> tuple | None:
    """What made the file's cases: its binary, command line less where it wrote, and
    topology less the host name; None where a part is missing (read everything)."""
    words = []
    for name in ("tool_version", "git_revision", "command_line"):
        if not root.has_attribute(name):
            return None
        words.append(str(root.attribute(name)))
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


def _checked(table: Group, columns: Mapping[str, np.ndarray]) -> int:
    """The table's row count (Group.rows); also checks that ``case_id`` is an integer and
    any figure a number (a string there would make the comparison itself fail)."""
    for name, values in columns.items():
        numeric = "iu" if name == "case_id" else "iuf" if name in FIGURES else ""
        if numeric and values.dtype.kind not in numeric:
            raise RunFileError(f"{shown(table.path)}: column {name} of table {table.name} holds "
                               f"{'text' if values.dtype.kind in 'OSU' else values.dtype}; valid: "
                               f"{'integers' if name == 'case_id' else 'numbers'} (docs/schema.md)")
    return table.rows(columns)


#: Per family: the cases columns that are never identity (keys, outcomes, derived), as link names.
_NOT_IDENTITY = {family: {n.encode() for n in not_identity(family)} for family in FAMILIES}


def _cases(group: Group, plan: tuple | None) -> tuple[dict[str, np.ndarray], int]:
    """case_id, status, every identity column (those of an earlier file of the same plan:
    _PLANS), reason where a case is not ok, and the metric where the family's figure is in
    its cases table (nccl)."""
    family = group.name.partition("/")[0]
    spec = FAMILIES[family]
    names = group.names()
    wanted = ["case_id", "status"] + ([spec.metric] if spec.table == "cases" else [])
    group.require([*wanted, "reason"])
    columns = group.columns(wanted)
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
            kind = "f" if group.kind(name) in ("f", "c") else ""
            _KINDS[(family, name)] = kind
            if not kind:
                identity[name] = group.column(name)
        columns.update(identity)
        if key and {len(v) for v in identity.values()} <= {len(columns["case_id"])}:
            if len(_PLANS) > 256:
                _PLANS.clear()
            _PLANS[key] = identity
    rows = _checked(group, columns)
    if len(np.unique(columns["case_id"])) != rows:
        raise RunFileError(f"{shown(group.path)}: table {group.name} names a case_id twice; valid: one row a case")
    if (columns["status"] != "ok").any():
        columns["reason"] = group.columns(["reason"])["reason"]
        _checked(group, columns)
    if spec.table == "cases":
        check_non_negative(group.path, group.name, spec.metric, columns[spec.metric])
    return columns, rows


def _samples(group: Group) -> tuple[dict[str, np.ndarray], int]:
    spec = FAMILIES[group.name.partition("/")[0]]
    columns = group.columns(["case_id", spec.metric], spec.sample_keys)
    rows = _checked(group, columns)
    check_non_negative(group.path, group.name, spec.metric, columns[spec.metric])
    if group.has("time_s"):  # the measured time the metric comes from: a negative one is a broken file
        check_non_negative(group.path, group.name, "time_s", group.column("time_s"))
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
