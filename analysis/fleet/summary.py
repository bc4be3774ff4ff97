"""A node's fleet rows, written once beside its files by the node's own vetting job
(``python -m analysis fleet-summary OUTDIR/<host>``; vet_node.sh runs it last), so that the
fleet analysis reads one small file a node instead of the preset's 13 HDF5 files.

Reading HDF5 is almost all of a fleet analysis (about 7 ms a file, 15 datasets each):
2,688 nodes of 13 files are 35,000 reads on the login node, while each node reduces its
own 13 in a tenth of a second, all nodes at once.

A summary is a cache, never a second source of truth: it names every file it was made
from with its size and modification time, and the fleet analysis uses it only where the
node's folder still holds exactly those files, unchanged, and the summary was made by this
very fleet code (the digest of table.py, which derives the rows); otherwise it says why and
reads the files. A file that could not be read when the summary was made is read again,
so its node is judged on the file, as without a summary."""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import outfiles
from ..errors import InputError
from ..results.io import shown
from . import table
from .table import COLUMNS, EXTRA, SPREAD

NAME = "fleet-summary.json"
FORMAT = "mempath-fleet-summary"
#: Raised when the summary's layout changes; the rows themselves are covered by _DIGEST.
VERSION = 1
_BOOL = ("higher_is_better", "synthetic")
_FLOAT = ("value", SPREAD)


def _digest() -> str:
    """Of the code that derives the rows (the table, and the conditions' causes it holds):
    a summary by other code is not used."""
    from ..model import causes
    from ..results import conditions
    code = b"".join(Path(m.__file__).read_bytes() for m in (table, causes, conditions))
    return hashlib.sha256(code).hexdigest()[:16]


_DIGEST = _digest()


def file_stats(folder: Path, files: Sequence[Path]) -> list[list[Any]]:
    out = []
    for path in files:
        stat = path.stat()
        out.append([path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns])
    return out


def _encoded(name: str, values: Any) -> Any:
    if name in _FLOAT:  # JSON has no NaN: null stands for it
        return [None if math.isnan(v) else v for v in values.astype(float).tolist()]
    if name in _BOOL:
        return [bool(v) for v in values.tolist()]
    codes, texts = values  # read_chunk's (codes, texts)
    if any(not isinstance(t, str) for t in texts):
        raise ValueError(f"column {name} holds a cell that is not text")
    return {"texts": list(texts), "codes": codes.tolist()}


_NUMBER_TYPES = {float, int, type(None)}


def _decoded(name: str, value: Any, rows: int) -> Any:
    """A column: an array of numbers or booleans, or texts as (int32 codes, texts)."""
    # Types are checked per column (set(map(type, ...)) runs in C): a summary is read per
    # node of thousands, and it must be as strict as a result file, not slower than one.
    if name in _FLOAT:
        if not isinstance(value, list) or not set(map(type, value)) <= _NUMBER_TYPES:
            raise ValueError(f"column {name} is not a list of numbers")
        array = np.array(value, dtype=float)  # null (None) becomes NaN
    elif name in _BOOL:
        if not isinstance(value, list) or not set(map(type, value)) <= {bool}:
            raise ValueError(f"column {name} is not a list of booleans")
        array = np.array(value, dtype=bool)
    else:
        texts, codes = value["texts"], np.asarray(value["codes"], dtype=np.int64)
        if not isinstance(texts, list) or not set(map(type, texts)) <= {str} or codes.ndim != 1 \
                or (len(codes) and (codes.min() < 0 or codes.max() >= len(texts))):
            raise ValueError(f"column {name} has codes outside its texts")
        if len(codes) != rows:
            raise ValueError(f"column {name} has {len(codes)} rows, not {rows}")
        return codes.astype(np.int32), texts
    if len(array) != rows:
        raise ValueError(f"column {name} has {len(array)} rows, not {rows}")
    return array


def document(folder: Path, files: Sequence[Path], stats: list[list[Any]], chunk: dict[str, Any]) -> dict[str, Any]:
    """The summary of the node folder's first-pass ``files`` (their ``stats`` before they were
    read) from load.read_chunk()'s answer ``chunk`` of them: what folder/NAME holds."""
    read = {shown(p): p for p in files}
    try:
        columns = {c: _encoded(c, chunk["columns"][c]) for c in (*COLUMNS, *EXTRA)}
    except ValueError as error:
        raise InputError(f"{shown(folder)}: cannot be summarised ({error})") from None
    return {
        "format": FORMAT, "version": VERSION, "digest": _DIGEST, "files": stats,
        "rows": chunk["rows"], "stamps": chunk["stamps"],
        "names": [read[n].relative_to(folder).as_posix() for n in chunk["names"]],
        "broken": [p.relative_to(folder).as_posix() for p, _ in chunk["broken"]],
        "columns": columns,
    }


def write(folder: Path, files: Sequence[Path], stats: list[list[Any]], chunk: dict[str, Any]) -> Path:
    """folder/NAME from document() (outfiles: a reader never sees half a summary, a
    planted link is replaced, not followed), unless a file changed while it was read."""
    summary = document(folder, files, stats, chunk)
    if file_stats(folder, files) != stats:  # a file changed while it was read: no summary
        raise InputError(f"{shown(folder)}: a result file changed while it was summarised; "
                         "run fleet-summary again when the node's job has ended")
    target = folder / NAME
    outfiles.write_text(target, json.dumps(summary, separators=(",", ":"), allow_nan=False))
    return target


def read(folder: Path, files: Sequence[Path]) -> tuple[dict[str, Any] | None, str]:
    """The summary of ``folder`` as read_chunk() would return for ``files`` (the first-pass
    files of the folder), or None and why it cannot stand for them."""
    path = folder / NAME
    try:
        if not path.is_file() or path.is_symlink():
            return None, "not a regular file"
        document = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            return None, "not a fleet summary"
        if document.get("version") != VERSION or document.get("digest") != _DIGEST:
            return None, "written by another version of the analysis"
        if document.get("files") != file_stats(folder, files):
            return None, "the node's files changed since it was written"
        rows = [int(r) for r in document["rows"]]
        names = [str(n) for n in document["names"]]
        stamps = [str(s) for s in document["stamps"]]
        if len(names) != len(rows) or len(stamps) != len(rows) or min(rows, default=0) < 0:
            raise ValueError("rows, names and stamps differ in length")
        total = sum(rows)
        columns = {c: _decoded(c, document["columns"][c], total)
                   for c in (*COLUMNS, *EXTRA)}
        broken = [folder / str(n) for n in document["broken"]]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        return None, f"cannot be used ({error})"
    return {"columns": columns, "rows": rows, "stamps": stamps,
            "names": [shown(folder / n) for n in names], "again": broken}, ""
