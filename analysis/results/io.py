"""Load mempath HDF5 result files (docs/schema.md) into pandas.

A table is a group of equal-length 1-D datasets, one per column (``bw/samples``,
``bw/cases``); strings are variable-length UTF-8 and come back as ``str``.

This module is the one reader of result files for report, compare, fleet and history
(docs/schema.md, "Reading a result file"): ``open_result`` checks the schema version and
the links first; text that is not UTF-8 is decoded with ``errors="backslashreplace"``
(each bad byte becomes the four characters ``\\xNN``, as ``mempath export`` does).
"""
from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from ..errors import InputError
from . import workers

SCHEMA_VERSION = 1
#: Float columns whose names end so are times or rates (docs/schema.md): never negative.
NON_NEGATIVE = ("GBps", "TFLOPs", "tflops", "_s", "_ns", "_us", "ns_per_access")


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


#: How text that is not UTF-8 is decoded, here and in every reader of result files.
TEXT_ERRORS = "backslashreplace"


def text(value: bytes | str) -> str:
    """Text of a result file as valid UTF-8: bytes that are not UTF-8 as \\xNN. h5py hands
    such bytes of a UTF-8 attribute over as lone surrogates (surrogateescape), which no
    UTF-8 writer accepts."""
    if isinstance(value, str):
        if value.isascii():
            return value
        value = value.encode("utf-8", "surrogateescape")
    return value.decode("utf-8", TEXT_ERRORS)


def decode(value: Any) -> Any:
    """An HDF5 attribute or cell as plain Python: str for bytes, int/float for numpy scalars."""
    if isinstance(value, (bytes, str)):
        return text(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [decode(v) for v in value.tolist()]
    return value


def shown(path: str | Path) -> str:
    """``path`` as printable UTF-8 text: bytes of a non-UTF-8 name as \\xNN escapes."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


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


def unreadable(path: Path, why: str) -> str:
    """The line for a file the HDF5 library could not read: ``why`` says what it did."""
    return f"{shown(path)}: {why}; the file is damaged, give an intact mempath result file"


def open_result(path: Path) -> h5py.File:
    """Open and validate: a mempath file of the schema version this package reads."""
    return h5py.File(open_result_id(path))


@contextmanager
def result_file(path: Path) -> Iterator[Any]:
    """open_result's checks, the file as h5py's low-level FileID: readers of thousands of
    files (fleet, compare) read through low-level calls, where h5py's File and its
    attribute objects cost more per file than the reads."""
    fid = open_result_id(path)
    try:
        yield fid
    finally:
        fid.close()


def open_result_id(path: Path) -> Any:
    """The FileID of a validated mempath file of the schema version this package reads."""
    if not path.is_file():
        raise RunFileError(f"{shown(path)}: no such file")
    if shown(path.name) != path.name:  # the name goes into UTF-8 reports and tables
        raise RunFileError(f"{shown(path)}: the file name is not valid UTF-8; "
                           "valid: a UTF-8 file name (rename the file)")
    try:
        fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY)
    except OSError:
        raise RunFileError(f"{shown(path)}: not an HDF5 file (or a truncated one); "
                           "give a mempath result file (.h5)") from None
    try:
        version = attribute(fid, "schema_version") if h5py.h5a.exists(fid, b"schema_version") else None
        tool = attribute(fid, "tool") if h5py.h5a.exists(fid, b"tool") else "mempath"
        if version is None or tool != "mempath":
            raise RunFileError(f"{shown(path)}: no schema_version attribute (or a tool other than mempath), "
                               "so not a mempath result file; give a file written by mempath or the analysis")
        if version != SCHEMA_VERSION:
            raise RunFileError(f"{shown(path)}: schema_version {one_line(version)} is not "
                               f"supported; this analysis reads schema_version {SCHEMA_VERSION}")
        _check_links(path, fid)
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
        fid.close()  # h5py's errors for a damaged attribute or link table of a readable file
        raise RunFileError(f"{shown(path)}: cannot be read ({one_line(str(error))}); the file is "
                           "damaged, give an intact mempath result file") from None
    except BaseException:
        fid.close()
        raise
    return fid


# Text cells decoded once per process: alike files repeat the same few hundred strings, and
# one shared str per text keeps a fleet's tables at a pointer per cell.
_TEXTS: dict[bytes, str] = {}
#: Per process: the HDF5 memory type of each column dtype (h5py makes a new one per read).
_MTYPES: dict[tuple[str, str], Any] = {}


def shared_text(raw: Any) -> Any:
    """``raw`` bytes as text (TEXT_ERRORS), one shared str per distinct text; else ``raw``."""
    if isinstance(raw, bytes):
        text = _TEXTS.get(raw)
        if text is None:
            text = _TEXTS.setdefault(raw, raw.decode("utf-8", TEXT_ERRORS))
        return text
    return raw


def attribute(fid: Any, key: str) -> Any:
    """A root attribute through the low-level calls, decoded (decode)."""
    handle = h5py.h5a.open(fid, key.encode())
    data = np.empty(handle.shape, dtype=handle.dtype)
    handle.read(data)
    if data.shape == ():
        return decode(shared_text(data[()]) if key != "topology" else data[()])
    return decode(data)


def read_column(dataset: Any, name: str) -> np.ndarray:
    """One column from an open low-level dataset: numbers as their array, strings as an
    object array of shared str. ValueError (the file is damaged)
    where ``name`` is not a 1-D dataset."""
    shape = dataset.shape if isinstance(dataset, h5py.h5d.DatasetID) else ()
    if len(shape) != 1:
        raise ValueError(f"{name} is not a 1-D column (docs/schema.md)")
    dtype = dataset.dtype
    data = np.empty(shape, dtype=dtype)
    if data.size:
        key = (dtype.str, repr(dtype.metadata))
        mtype = _MTYPES.get(key)
        if mtype is None:
            mtype = _MTYPES[key] = h5py.h5t.py_create(dtype)
        dataset.read(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype)
    if data.dtype.kind in "OS":
        raw = data.tolist()
        texts = list(map(_TEXTS.get, raw))  # C-level lookups; a text not seen yet is rare
        if None in texts:
            texts = [shared_text(v) for v in raw]
        return np.array(texts, dtype=object)
    return data


def one_line(value: Any) -> str:
    """A value of a file, in a message of one line: characters that are not printable
    (line breaks, escapes) as \\xNN or \\uNNNN."""
    if not isinstance(value, (str, bytes)):
        return str(value)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text(value))


def _check_links(path: Path, fid: Any) -> None:
    """RunFileError unless every object is reached by one hard link: mempath writes nothing
    else, and a soft or external link (a loop, another file) or an object of two names (a
    group that holds itself) would make the tables a walk of the links, not of the file."""
    seen = {h5py.h5o.get_info(fid).addr}

    def visit(name: bytes, info: Any) -> str | None:
        kinds = {h5py.h5l.TYPE_SOFT: "a soft link", h5py.h5l.TYPE_EXTERNAL: "an external link"}
        if info.type != h5py.h5l.TYPE_HARD:
            return f"{one_line(name)} is {kinds.get(info.type, 'a user-defined link')}"
        if info.u in seen:
            return f"{one_line(name)} links to an object already reached (a link cycle or a second name)"
        seen.add(info.u)
        return None

    try:
        problem = fid.links.visit(visit, info=True)
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
        raise RunFileError(f"{shown(path)}: cannot be read ({error}); the file is damaged, "
                           "give an intact mempath result file") from None
    if problem:
        raise RunFileError(f"{shown(path)}: {problem}; valid: a mempath result file, whose "
                           "groups and datasets each have one name (no soft, external or repeated links)")


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
    return topology


def check_non_negative(path: Path, table: str, name: str, values: np.ndarray) -> None:
    """RunFileError where a time or rate column (NON_NEGATIVE) holds a negative value."""
    if values.dtype.kind == "f" and name.endswith(NON_NEGATIVE) and (values < 0).any():
        raise RunFileError(f"{shown(path)}: column {name} of table {table} holds negative "
                           f"values ({values.min():g}); valid: times and rates >= 0 or NaN")


def _read_table(path: Path, group: h5py.Group) -> pd.DataFrame:
    columns = {name: read_column(ds.id, name) for name, ds in group.items() if isinstance(ds, h5py.Dataset)}
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise RunFileError(f"{shown(path)}: table {group.name} has columns of different lengths")
    for name, values in columns.items():
        check_non_negative(path, group.name.lstrip("/"), name, values)
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
    with open_result(path) as handle:
        group = handle.get(name)
        if not isinstance(group, h5py.Group):
            raise RunFileError(f"{shown(path)}: no table {name}; tables: "
                               f"{', '.join(_table_groups(handle)) or 'none'}")
        return _read_table(path, group)


def load_run(path: str | Path, name: str | None = None) -> Run:
    """Every table of one file with its root attributes; ``topology`` parsed from JSON."""
    path = Path(path)
    with open_result(path) as handle:
        try:
            attrs = {key: decode(value) for key, value in handle.attrs.items()}
            tables = {table: _read_table(path, handle[table]) for table in _table_groups(handle)}
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            # h5py reports damaged objects inside a readable file with any of these.
            raise RunFileError(f"{shown(path)}: cannot be read ({error}); the file is damaged, "
                               "give an intact mempath result file") from None
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
