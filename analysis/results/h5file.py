"""The one walk of a mempath result file's HDF5 groups (docs/schema.md, "Reading a result
file"), for every reader: the report's whole tables (io.load_run), the fleet's few columns
of thousands of nodes, compare's identity columns. Each reader keeps its own answer (which
columns, which codes) and none has an h5py traversal of its own, so a damaged or hostile
file is refused with the same one line everywhere.

``walk`` checks the schema version and the links first; text that is not UTF-8 is decoded
with ``errors="backslashreplace"`` (each bad byte becomes the four characters ``\\xNN``,
as ``mempath export`` does). Reads go through h5py's low-level calls: its high-level File
and attribute objects cost more per file than the reads of a fleet's 10,000 files.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import InputError

SCHEMA_VERSION = 1
#: Float columns whose names end so are times or rates (docs/schema.md): never negative.
NON_NEGATIVE = ("GBps", "TFLOPs", "tflops", "_s", "_ns", "_us", "ns_per_access")
#: How text that is not UTF-8 is decoded, here and in every reader of result files.
TEXT_ERRORS = "backslashreplace"
#: What h5py raises for a damaged object inside a readable file.
_DAMAGED = (OSError, KeyError, ValueError, TypeError, RuntimeError)


class RunFileError(InputError):
    """A path that is not a readable mempath result file of a supported schema."""


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


def one_line(value: Any) -> str:
    """A value of a file, in a message of one line: characters that are not printable
    (line breaks, escapes) as \\xNN or \\uNNNN."""
    if not isinstance(value, (str, bytes)):
        return str(value)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text(value))


def unreadable(path: Path, why: str) -> str:
    """The line for a file the HDF5 library could not read: ``why`` says what it did."""
    return f"{shown(path)}: {why}; the file is damaged, give an intact mempath result file"


def damaged(path: Path, error: BaseException) -> RunFileError:
    return RunFileError(unreadable(path, f"cannot be read ({one_line(str(error))})"))


#: The root attributes of docs/schema.md by what they hold; whichever a reader reads is
#: checked (Group.attribute, Group.attributes of the root), so that the report's provenance,
#: the figures' page size and MPI machines and the fleet's flags never meet another type.
#: schema_version and tool are _open's.
TEXT_ATTRIBUTES = frozenset({
    "tool_version", "git_revision", "command_line", "host", "start_time", "end_time", "topology",
    "kernel_release", "arch", "thp_enabled", "cpu_governor", "gpu_clocks", "gpu_uuids", "build_type",
    "compiler", "aborted", "mpi_library", "torch_version", "cuda_runtime", "nvml", "gpu_conditions",
    "host_conditions"})
#: Integers from 0 to 2^63-1 (sizes, versions, counts); FLAG_ATTRIBUTES 0 or 1.
INTEGER_ATTRIBUTES = frozenset({"page_size", "cuda_driver_version", "cuda_runtime_version", "synthetic",
                                "mpi_ranks", "mpi_nodes", "mpi_machines", "mpi_gpus", "nccl_version"})
FLAG_ATTRIBUTES = frozenset({"synthetic"})
MAX_INTEGER = 2**63 - 1


def _what(value: Any) -> str:
    """What an attribute's value is, in a message: its kind and (cut) the value."""
    if value is None:
        return "no value (an empty dataspace)"
    if isinstance(value, list):
        return f"an array of {len(value)} values"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value:g}"
    if isinstance(value, str):
        return f"the text {one_line(value[:40])!r}" + ("..." if len(value) > 40 else "")
    return f"a value of type {type(value).__name__}"


def check_attribute(path: Path, key: str, value: Any) -> Any:
    """``value`` of the root attribute ``key``; RunFileError where it is not what
    docs/schema.md says the attribute holds (TEXT_ATTRIBUTES, INTEGER_ATTRIBUTES;
    gpu_clocks also a JSON list of {"gpu": N, "sm_clock_khz": KHZ, "mem_clock_khz": KHZ})."""
    valid = ""
    if key in TEXT_ATTRIBUTES and not isinstance(value, str):
        valid = "text"
    elif key in FLAG_ATTRIBUTES and value not in (0, 1):
        valid = "0 or 1"
    elif key in INTEGER_ATTRIBUTES and (isinstance(value, bool) or not isinstance(value, int)
                                        or not 0 <= value <= MAX_INTEGER):
        valid = "an integer from 0 to 2^63-1"
    elif key == "gpu_clocks":
        valid = _gpu_clocks_problem(value)
    elif key == "host" and host_problem(value):
        valid = host_problem(value)
    if valid:
        raise RunFileError(f"{shown(path)}: root attribute {key} holds {_what(value)}; valid: {valid} "
                           "(docs/schema.md)")
    return value


#: The longest host name Linux gives (HOST_NAME_MAX): a longer one was not gethostname()'s.
MAX_HOST_NAME = 64


def host_problem(host: str) -> str:
    """What a host name should be, where ``host`` is not one ('' where it is): a node's name,
    in every one-line message and in the figures' labels."""
    if not host.isprintable():
        return "a host name of printable characters (no line break or control character)"
    if len(host) > MAX_HOST_NAME:
        return f"a host name of at most {MAX_HOST_NAME} characters (Linux's HOST_NAME_MAX)"
    return ""


def _gpu_clocks_problem(value: str) -> str:
    """What gpu_clocks should be, where it is not that ('' where it is)."""
    valid = 'a JSON list of {"gpu": N, "sm_clock_khz": KHZ, "mem_clock_khz": KHZ}, N and KHZ >= 0'
    try:
        rows = json.loads(value or "[]")
    except (ValueError, RecursionError):
        return valid
    if not isinstance(rows, list):
        return valid
    for row in rows:
        if not isinstance(row, dict) or not _count(row.get("gpu")):
            return valid
        if not all(_count(row[k], integer=False) for k in ("sm_clock_khz", "mem_clock_khz") if k in row):
            return valid
    return ""


def _count(value: Any, integer: bool = True) -> bool:
    """Whether ``value`` is an integer (or, ``integer`` False, a finite number) from 0 to MAX_INTEGER."""
    if isinstance(value, bool) or not isinstance(value, (int, float) if not integer else int):
        return False
    return 0 <= value <= MAX_INTEGER


def check_non_negative(path: Path, table: str, name: str, values: np.ndarray) -> None:
    """RunFileError where a time or rate column (NON_NEGATIVE) holds a negative value."""
    if values.dtype.kind == "f" and name.endswith(NON_NEGATIVE) and (values < 0).any():
        raise RunFileError(f"{shown(path)}: column {name} of table {table} holds negative "
                           f"values ({values.min():g}); valid: times and rates >= 0 or NaN")


# Text cells decoded once per process: alike files repeat the same few hundred strings, and
# one shared str per text keeps a fleet's tables at a pointer per cell.
_TEXTS: dict[bytes, str] = {}
#: Per process: the HDF5 memory type of each column dtype (h5py makes a new one per read).
_MTYPES: dict[tuple[str, str], Any] = {}


def _shared_text(raw: Any) -> Any:
    """``raw`` bytes as text (TEXT_ERRORS), one shared str per distinct text; else ``raw``."""
    if isinstance(raw, bytes):
        found = _TEXTS.get(raw)
        if found is None:
            found = _TEXTS.setdefault(raw, raw.decode("utf-8", TEXT_ERRORS))
        return found
    return raw


def _attribute(oid: Any, raw: bytes) -> Any:
    handle = h5py.h5a.open(oid, raw)
    if handle.shape is None:  # a null dataspace (h5py.Empty): an attribute without a value
        return None
    data = np.empty(handle.shape, dtype=handle.dtype)
    handle.read(data)
    if data.shape == ():
        return decode(_shared_text(data[()]) if raw != b"topology" else data[()])
    return decode(data)


def _read_column(dataset: Any, name: str) -> np.ndarray:
    """One column from an open low-level dataset: numbers as their array, strings as an
    object array of shared str. ValueError (the file is damaged) where ``name`` is not a
    1-D dataset."""
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
            texts = [_shared_text(v) for v in raw]
        return np.array(texts, dtype=object)
    return data


class Group:
    """A group of an open result file: its attributes, members, subgroups and columns."""

    def __init__(self, path: Path, gid: Any, name: str = ""):
        self.path, self.id, self.name = path, gid, name
        self._names: list[bytes] | None = None

    def names(self) -> list[bytes]:
        """The member link names in name order, listed once (iterating a GroupID looks each
        up by index)."""
        if self._names is None:
            names: list[bytes] = []
            self.id.links.iterate(names.append, idx_type=h5py.h5.INDEX_NAME, order=h5py.h5.ITER_INC)
            self._names = names
        return self._names

    def has(self, name: str) -> bool:
        return name.encode() in self.names()

    def has_attribute(self, key: str) -> bool:
        return h5py.h5a.exists(self.id, key.encode())

    def attribute(self, key: str, default: Any = None) -> Any:
        """An attribute decoded (decode); ``default`` where there is none. The root's
        documented attributes checked (check_attribute)."""
        if not self.has_attribute(key):
            return default
        value = _attribute(self.id, key.encode())
        return check_attribute(self.path, key, value) if not self.name else value

    def attributes(self) -> dict[str, Any]:
        """Every attribute, in the order h5py's File.attrs lists them (the root's checked)."""
        keys: list[bytes] = []
        tracked = self.id.get_create_plist().get_attr_creation_order() & h5py.h5p.CRT_ORDER_TRACKED
        h5py.h5a.iterate(self.id, lambda name, *_: keys.append(name),
                         index_type=h5py.h5.INDEX_CRT_ORDER if tracked else h5py.h5.INDEX_NAME)
        values = {text(key): _attribute(self.id, key) for key in keys}
        if not self.name:
            for key, value in values.items():
                check_attribute(self.path, key, value)
        return values

    def group(self, name: str) -> Group | None:
        """The member group ``name`` (a path: ``bw/cases``), None where there is none."""
        group: Group | None = self
        for part in name.split("/"):
            if group is None or not group.has(part):
                return None
            member = h5py.h5o.open(group.id, part.encode())
            group = (Group(self.path, member, f"{group.name}/{part}".lstrip("/"))
                     if isinstance(member, h5py.h5g.GroupID) else None)
        return group

    def kind(self, name: str) -> str:
        """The numpy kind of the member dataset ``name`` ('' for a group: no column)."""
        member = h5py.h5o.open(self.id, name.encode())
        return member.dtype.kind if isinstance(member, h5py.h5d.DatasetID) else ""

    def column(self, name: str | bytes) -> np.ndarray:
        raw = name if isinstance(name, bytes) else name.encode()
        return _read_column(h5py.h5o.open(self.id, raw), f"{self.name}/{text(raw)}")

    def columns(self, wanted: Sequence[str], optional: Sequence[str] = ()) -> dict[str, np.ndarray]:
        """The columns ``wanted`` (one line names those the table lacks) and the ones of
        ``optional`` it holds, of one length."""
        self.require(wanted)
        columns = {name: self.column(name) for name in wanted}
        columns.update({name: self.column(name) for name in optional if name not in columns and self.has(name)})
        self.rows(columns)
        return columns

    def require(self, names: Sequence[str]) -> None:
        """RunFileError naming the columns of ``names`` this table lacks."""
        lacking = [c for c in names if not self.has(c)]
        if lacking:
            raise RunFileError(f"{shown(self.path)}: table {self.name} lacks the column(s) "
                               f"{', '.join(lacking)}; valid: the columns of docs/schema.md")

    def rows(self, columns: Mapping[str, np.ndarray]) -> int:
        """The row count of a table's columns; RunFileError where their lengths differ."""
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise RunFileError(f"{shown(self.path)}: table {self.name} has columns of different lengths")
        return lengths.pop() if lengths else 0

    def table(self) -> dict[str, np.ndarray]:
        """Every column of this table (a group of tables() only), of one length, times and
        rates not negative."""
        columns = {text(raw): self.column(raw) for raw in self.names()}
        self.rows(columns)
        for name, values in columns.items():
            check_non_negative(self.path, self.name, name, values)
        return columns

    def tables(self) -> list[Group]:
        """The tables below this group (groups whose members are all datasets), by name."""
        found: list[Group] = []
        members = [(text(raw), h5py.h5o.open(self.id, raw)) for raw in self.names()]
        if self.name and members and all(isinstance(m, h5py.h5d.DatasetID) for _, m in members):
            found.append(self)
        for name, member in members:
            if isinstance(member, h5py.h5g.GroupID):
                found += Group(self.path, member, f"{self.name}/{name}".lstrip("/")).tables()
        return sorted(found, key=lambda group: group.name)


@contextmanager
def walk(path: Path) -> Iterator[Group]:
    """The root group of a validated mempath file of the schema version this package
    reads; an HDF5 error while it is read becomes the one-line RunFileError."""
    fid = _open(path)
    try:
        yield Group(path, fid)
    except _DAMAGED as error:
        raise damaged(path, error) from None
    finally:
        fid.close()


def _open(path: Path) -> Any:
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
        root = Group(path, fid)
        version = root.attribute("schema_version")
        if version is None or root.attribute("tool", "mempath") != "mempath":
            raise RunFileError(f"{shown(path)}: no schema_version attribute (or a tool other than mempath), "
                               "so not a mempath result file; give a file written by mempath or the analysis")
        if version != SCHEMA_VERSION:
            raise RunFileError(f"{shown(path)}: schema_version {one_line(version)} is not "
                               f"supported; this analysis reads schema_version {SCHEMA_VERSION}")
        _check_links(path, fid)
    except _DAMAGED as error:
        fid.close()
        raise damaged(path, error) from None
    except BaseException:
        fid.close()
        raise
    return fid


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

    problem = fid.links.visit(visit, info=True)
    if problem:
        raise RunFileError(f"{shown(path)}: {problem}; valid: a mempath result file, whose "
                           "groups and datasets each have one name (no soft, external or repeated links)")
