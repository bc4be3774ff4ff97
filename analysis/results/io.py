"""Load mempath HDF5 result files (docs/schema.md) into pandas.

A table is a group of equal-length 1-D datasets, one per column (``bw/samples``,
``bw/cases``); strings are variable-length UTF-8 and come back as ``str``.

Files are read through h5file.walk, the one walk of a result file that the fleet and
compare read their columns through too (docs/schema.md, "Reading a result file").
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import kinds, workers
from .h5file import RunFileError, host_problem, one_line, shown, unreadable, walk


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


#: docs/topology.md's names: processors cpuN, gpuN, cpus; memories numaN, gpuN. A gpuN
#: processor or memory is GPU N (its "gpu"), a numaN memory NUMA node N (its "numa").
PROCESSOR_NAME = re.compile(r"(cpu|gpu)(0|[1-9][0-9]{0,8})|cpus")
MEMORY_NAME = re.compile(r"(numa|gpu)(0|[1-9][0-9]{0,8})")
#: The kinds of docs/topology.md ("JSON"), by the name's prefix (kinds.def): a processor's
#: name starts with its kind; a numaN memory is a NUMA node that holds memory (an empty
#: node is none), a gpuN memory the GPU's own, which no NUMA node shows.
PROCESSOR_KINDS = {kind: kind for kind in kinds.PROCESSOR_KINDS}
MEMORY_KINDS = {"numa": tuple(k for k, m in kinds.MEMORY_KINDS.items() if m["numa_node"] and k != "empty"),
                "gpu": tuple(k for k, m in kinds.MEMORY_KINDS.items() if not m["numa_node"])}
# What a field of an entry holds where present (docs/topology.md, "JSON"): a count (an
# integer from 0 to 2^63-1), a count or null, text, a boolean, a list of counts, of text, an object.
_COUNT, _NULL, _TEXT, _BOOL, _COUNTS, _TEXTS, _OBJECT, _OBJECTS = (
    "an integer >= 0", "an integer >= 0 or null", "text", "true or false", "a list of integers >= 0",
    "a list of texts", "an object", "a list of objects")
TOPOLOGY_FIELDS: dict[str, dict[str, str]] = {
    "": {"host": _TEXT, "source": _TEXT, "arch": _TEXT, "cpu_model": _TEXT, "numa_nodes": _OBJECTS},
    "processors": {"kind": _TEXT, "numa": _NULL, "cpus": _COUNTS, "cores": _NULL, "cache_bytes": _NULL,
                   "gpu": _COUNT, "model": _TEXT, "cc": _TEXT, "sm_count": _NULL, "memory_bytes": _NULL,
                   "l2_bytes": _NULL, "hbm_numa": _NULL, "host_numa": _NULL, "link": _OBJECT,
                   "pageable_access": _BOOL, "host_page_tables": _BOOL, "concurrent_managed": _BOOL,
                   "peers": _COUNTS, "nvlink_peers": _COUNTS, "pci_bus_id": _TEXT},
    "memories": {"kind": _TEXT, "numa": _NULL, "bytes": _NULL, "gpu": _NULL, "offline": _BOOL},
    "paths": {"pu": _TEXT, "mem": _TEXT, "via": _TEXT, "allocs": _TEXTS, "skipped": _OBJECTS},
    "numa_nodes": {"id": _COUNT, "cpus": _COUNTS, "cores": _NULL, "mem_total_bytes": _NULL,
                   "mem_free_bytes": _NULL, "distances": _COUNTS, "kind": _TEXT, "gpu": _NULL,
                   "llc_bytes": _NULL, "socket": _NULL},
    "link": {"type": _TEXT, "gen": _NULL, "width": _NULL},
}
#: The fields readers index without a default, which such an entry must have.
_REQUIRED = {"paths": ("pu", "mem", "via"), "numa_nodes": ("id",)}
_MAX = 2**63 - 1


def _holds(value: Any, what: str) -> bool:
    """Whether ``value`` is ``what`` (TOPOLOGY_FIELDS' words)."""
    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _MAX
    if what == _NULL:
        return value is None or count(value)
    if what == _COUNT:
        return count(value)
    if what in (_COUNTS, _TEXTS, _OBJECTS):
        kind = {_COUNTS: count, _TEXTS: lambda v: isinstance(v, str), _OBJECTS: lambda v: isinstance(v, dict)}[what]
        return isinstance(value, list) and all(map(kind, value))
    return isinstance(value, {_TEXT: str, _BOOL: bool, _OBJECT: dict}[what])


def _topology_problem(topology: dict[str, Any]) -> str:
    """What in a topology object a reader could not use ('' where nothing): a field of the
    wrong type, a name outside the naming rules, a kind that does not go with the name, an
    entry without the field its kind needs."""
    def fields(where: str, entry: dict[str, Any], rules: dict[str, str]) -> str:
        for key, what in rules.items():
            if key in entry and not _holds(entry[key], what):
                shown_value = one_line(json.dumps(entry[key], allow_nan=True)[:40])
                return f"{where}{key} is {shown_value}, not {what}"
        return ""

    problem = fields("", topology, TOPOLOGY_FIELDS[""])
    if not problem and host_problem(topology.get("host", "")):  # the node's name, as the attribute host
        problem = f"host {one_line(topology['host'][:40])!r} is not {host_problem(topology['host'])}"
    for key in ("processors", "memories", "paths", "numa_nodes"):
        for i, entry in enumerate(topology.get(key, []) if not problem else []):
            where = f"{key}[{i}]."
            problem = problem or fields(where, entry, TOPOLOGY_FIELDS[key])
            if not problem and isinstance(entry.get("link"), dict):
                problem = fields(f"{where}link.", entry["link"], TOPOLOGY_FIELDS["link"])
            if not problem and key in ("processors", "memories"):
                problem = _name_problem(where, key, entry)
            if not problem and key in _REQUIRED:
                lacking = [k for k in _REQUIRED[key] if k not in entry]
                problem = f"{where[:-1]} lacks {', '.join(lacking)}" if lacking else ""
            if problem:
                return problem
    return problem or _parts_problem(topology)


def _parts_problem(topology: dict[str, Any]) -> str:
    """A node's parts that do not go together: a processor or memory listed twice, processors
    without any memory, a GPU without its device memory (docs/topology.md: gpuN is GPU N's
    cudaMalloc memory), a processor and a memory without their path or with two: the peak
    model and the figures take each to be listed once."""
    for key in ("processors", "memories"):
        seen: set[str] = set()
        for entry in topology.get(key, []):
            if entry["name"] in seen:
                return f"{key} list {entry['name']} twice"
            seen.add(entry["name"])
    memories = {m["name"] for m in topology.get("memories", [])}
    processors = [p["name"] for p in topology.get("processors", [])]
    if processors and not memories:
        return f"processors ({', '.join(processors[:3])}) come with no memories"
    lacking = [p for p in processors if p.startswith("gpu") and p not in memories]
    if lacking:
        return f"processors list {lacking[0]} but its memories no {lacking[0]} (its device memory)"
    if "paths" in topology:  # mempath lists one for each processor and memory (topology_paths.cpp)
        listed = {(p["pu"], p["mem"]) for p in topology["paths"]}
        if len(listed) < len(topology["paths"]):
            twice = next(p for i, p in enumerate(topology["paths"])
                         if (p["pu"], p["mem"]) in {(q["pu"], q["mem"]) for q in topology["paths"][:i]})
            return f"paths list the one from {twice['pu']} to {twice['mem']} twice"
        missing = next(((p, m) for p in processors for m in sorted(memories) if (p, m) not in listed), None)
        if missing:
            return f"paths lack the one from {missing[0]} to {missing[1]} (mempath lists one for each processor and memory)"
    return ""


def _name_problem(where: str, key: str, entry: dict[str, Any]) -> str:
    """A processor's or memory's name against docs/topology.md's rules and its kind and number."""
    name, kind = entry["name"], entry.get("kind")
    rule, by_prefix = (PROCESSOR_NAME, PROCESSOR_KINDS) if key == "processors" else (MEMORY_NAME, MEMORY_KINDS)
    match = rule.fullmatch(name)
    if not match:
        valid = "cpuN, gpuN or cpus" if key == "processors" else "numaN or gpuN"
        return f"{where}name {one_line(name[:40])!r} is not a {key[:-1].replace('ie', 'y')} name ({valid})"
    prefix = name[:3] if name == "cpus" else match[1]
    allowed = by_prefix[prefix] if key == "memories" else (by_prefix[prefix],)
    if kind not in allowed:
        return f"{where}kind of {name} is {one_line(json.dumps(kind)[:40])}, not {' or '.join(allowed)}"
    number_key = {"gpu": "gpu", "numa": "numa"}.get(prefix)
    if number_key and (key == "memories" or prefix == "gpu") and number_key not in entry:
        # one wording for a field an entry lacks, as _REQUIRED's: "paths[0] lacks pu, mem, via"
        return f"{where[:-1]} lacks {number_key} ({name}'s number, {match[2]})"
    if number_key and (key == "memories" or prefix == "gpu") and entry.get(number_key) != int(match[2]):
        return f"{where}{number_key} of {name} is {one_line(json.dumps(entry.get(number_key))[:40])}, not {match[2]}"
    return ""


def parse_topology(path: Path, value: Any) -> dict[str, Any]:
    """The ``topology`` attribute: a JSON object whose processors, memories and paths,
    where present, are lists of objects (what every reader of it indexes), each entry's
    fields of the type docs/topology.md gives and its name within the naming rules."""
    try:
        topology = json.loads(str(value or "{}"))
    except RecursionError:
        raise RunFileError(f"{shown(path)}: the topology attribute nests too deep to be read; "
                           "valid: a JSON object as `mempath topo --json` writes") from None
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
    problem = _topology_problem(topology)
    if problem:
        raise RunFileError(f"{shown(path)}: the topology attribute's {problem}; {valid} (docs/topology.md)")
    return _no_lone_surrogates(topology) if "\\u" in str(value) else topology


def _no_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate in its texts (a JSON escape such as \\udcff, which
    json.loads takes, is no Unicode character and no UTF-8 writer takes it) written as the
    six characters of its escape: the text policy of docs/schema.md for JSON's escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8") if not value.isascii() else value
    if isinstance(value, list):
        return [_no_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_lone_surrogates(k): _no_lone_surrogates(v) for k, v in value.items()}
    return value


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
        known = seen.setdefault(host, [])
        if fact not in known:
            known.append(fact)
        number = known.index(fact) + 1
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
