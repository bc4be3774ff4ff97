"""The fleet's result files read into one fleet table (table.py's columns): folders
expanded, the files of one host merged, the newest run kept where two hold a case.

A fleet is tens of thousands of small files, and reading them is most of the analysis:
they are read by child processes (results/workers.py), each given a chunk of files and returning numpy
column arrays (never DataFrames or per-row objects), concatenated here in file order, so
that the table is the same however many processes read it."""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..results import workers
from ..results.io import RunFileError, files_below, one_line, result_files, shown, unreadable

#: The folder of a node's retest pass (vet_node.sh), left out of a first pass.
RETEST = ("retest",)
from . import summary
from .table import COLUMNS, EXTRA, SPREAD, fleet_columns, load_cases_run

#: Beside COLUMNS: the file (as shown) a row came from; integrity.py holds a node's files
#: against its plan and names the file in a reason.
FILE = "file"
_TEXT_COLUMNS = tuple(c for c in (*COLUMNS, *EXTRA) if c not in ("value", "higher_is_better",
                                                                   "synthetic", SPREAD))


def first_pass(folder: Path, pattern: str) -> list[Path]:
    """The files matching ``pattern`` below ``folder``, but for those in a ``retest`` folder
    below it: a retest pass is read with --retest only."""
    return files_below(folder, pattern, RETEST)


def write_summary(folder: Path) -> Path:
    """Summarise the node folder's first-pass result files into folder/summary.NAME
    (summary.py; `python -m analysis fleet-summary`)."""
    if not folder.is_dir():
        raise InputError(f"{shown(folder)}: not a folder; valid: a node's result folder "
                         "(OUTDIR/<host> of vet_node.sh)")
    files = first_pass(folder, "*.h5")
    if not files:
        raise InputError(f"{shown(folder)}: holds no .h5 result file; valid: a node's result "
                         "folder (OUTDIR/<host> of vet_node.sh)")
    stats = summary.file_stats(folder, files)
    return summary.write(folder, files, stats, read_chunk(files))


def first_pass_files(paths: Sequence[Path]) -> list[Path]:
    """RUNS: files as given, folders expanded to their first-pass .h5 files."""
    return result_files(paths, RETEST)


@dataclass(frozen=True)
class NodeFolder:
    """A node's folder found in a folder of RUNS, with its fleet summary (summary.py) and
    the first-pass files the summary must stand for."""
    folder: Path
    files: tuple[Path, ...]


def result_units(paths: Sequence[Path]) -> list[Path | NodeFolder]:
    """first_pass_files(), but where an expanded folder holds node folders with a fleet summary,
    each such node's files are one NodeFolder, in the place of its first file."""
    units: list[Path | NodeFolder] = []
    for path in paths:
        if not path.is_dir():
            units.append(path)
            continue
        files = first_pass(path, "*.h5")
        folders = {s.parent for s in first_pass(path, summary.NAME)}
        if not folders:
            units.extend(files)
            continue
        members: dict[Path, list[Path]] = {}
        order: list[Path] = []
        for file in files:
            owner = next((p for p in file.parents if p in folders), None)
            if owner not in members:
                order.append(file if owner is None else owner)
            if owner is not None:
                members.setdefault(owner, []).append(file)
        units += [NodeFolder(u, tuple(members[u])) if u in members else u for u in order]
    return units


def load_fleet(paths: Sequence[Path], rejected: list[str], notes: list[str],
               night: str | None = None, jobs: int | None = None,
               nights: bool = False,
               broken: list[tuple[Path, str]] | None = None,
               every_run: bool = False) -> pd.DataFrame:
    """The fleet table of every usable file; a bad file is one line in ``rejected`` and,
    where ``broken`` is given, (path, error) there, so that integrity.py can blame its node.
    Beside COLUMNS and WORDS, column FILE names the file each row came from.

    The files of one host are merged (a node's checks may write one file each); where two
    hold the same case, the run with the newest start_time is kept and each older file is
    one line in ``notes``. ``night`` files every row under that night (fleet-history
    append --night); ``nights``: files of other nights are not older runs (the history
    takes several nights at once); ``jobs`` processes read (default: the CPUs available);
    ``every_run``: keep each file's rows (the rounds of a retest pass), none dropped."""
    chunks = read_files(result_units(paths), night, jobs)
    rejected.extend(line for chunk in chunks for line in chunk["rejected"])
    notes.extend(line for chunk in chunks for line in chunk["notes"])
    if broken is not None:
        broken.extend(pair for chunk in chunks for pair in chunk["broken"])
    rows = [n for chunk in chunks for n in chunk["rows"]]
    if not rows:
        raise InputError("no usable mempath result file among RUNS; valid: .h5 files or "
                         "folders of them (docs/schema.md)")
    table = pd.DataFrame({c: _joined([chunk["columns"][c] for chunk in chunks], c)
                          for c in (*COLUMNS, *EXTRA)})
    stamps = [s for chunk in chunks for s in chunk["stamps"]]
    names = [n for chunk in chunks for n in chunk["names"]]
    origin = np.repeat(np.arange(len(rows)), rows)
    files = pd.Categorical(names)  # a file named twice in RUNS is one category
    table[FILE] = pd.Categorical.from_codes(files.codes[origin], files.categories)
    if every_run:
        return table
    return _newest(table, origin, stamps, names, notes, nights)


def read_files(files: Sequence[Path | NodeFolder], night: str | None = None,
               jobs: int | None = None) -> list[dict[str, Any]]:
    """read_chunk() of every chunk of ``files`` (files and node folders), in their order,
    in child processes (results/workers.py): a file on which the HDF5 library itself
    crashes or hangs (a damaged file; no reader of ours can catch that) is one rejected
    line naming it, and the fleet's other files are still read."""
    def lost(unit: Path | NodeFolder, why: str) -> dict[str, Any]:
        if isinstance(unit, NodeFolder):  # find the file
            return _merged(read_files(list(unit.files), night, jobs))
        line = unreadable(unit, why)
        return read_chunk([], night) | {"rejected": [line], "broken": [(unit, line)]}

    return workers.read_all(lambda chunk: read_chunk(chunk, night), files, jobs, lost, _merged)


def _merged(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """read_chunk() answers of consecutive units as one answer."""
    columns: dict[str, Any] = {}
    for name in (*COLUMNS, *EXTRA):
        if name in _TEXT_COLUMNS:
            texts = Texts()
            for part in parts:
                texts.add(*part["columns"][name])
            columns[name] = texts.coded()
        else:
            columns[name] = np.concatenate([part["columns"][name] for part in parts])
    return {"columns": columns,
            **{key: [x for part in parts for x in part[key]]
               for key in ("rows", "stamps", "names", "rejected", "broken", "notes")}}


def _check_start_time(path: Path, attrs: dict[str, Any]) -> None:
    """RunFileError where start_time names no date, or the file has none: the night a file
    is filed under (its first ten characters) would be no date, and one such file stopped a
    whole `fleet-history append`."""
    valid = "valid: ISO 8601 as mempath writes it (YYYY-MM-DDTHH:MM:SSZ), or give --night"
    stamp = str(attrs.get("start_time", "") or "")
    if not stamp:
        what = "start_time is empty" if "start_time" in attrs else "no start_time attribute"
        raise RunFileError(f"{shown(path)}: {what}, so no night to file it under; {valid}")
    try:  # the history's shape: fromisoformat alone takes 20261124T0 (ISO's basic format) as a date
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", stamp[:10]):
            raise ValueError(stamp)
        dt.date.fromisoformat(stamp[:10])
    except ValueError:
        raise RunFileError(f"{shown(path)}: start_time {one_line(stamp[:40])!r} is not a date and time; {valid}") from None


def read_chunk(files: Sequence[Path | NodeFolder], night: str | None = None) -> dict[str, Any]:
    """The fleet columns of some files, concatenated (text columns as Texts.coded()):
    per usable file its row count,
    start_time and shown name; per unusable file its one line and (path, line). A node
    folder is read from its summary where that still stands for its files (a note says
    why not, and its files are read)."""
    numbers: dict[str, list[np.ndarray]] = {c: [] for c in (*COLUMNS, *EXTRA)
                                            if c not in _TEXT_COLUMNS}
    texts = {c: Texts() for c in _TEXT_COLUMNS}
    rows, stamps, names, rejected, broken, notes = [], [], [], [], [], []

    def read(path: Path) -> None:
        try:
            run = load_cases_run(path)
            if night is None:
                _check_start_time(path, run.attrs)
        except RunFileError as error:
            rejected.append(str(error))
            broken.append((path, str(error)))
            return
        part = fleet_columns(run, night)
        for name, values in numbers.items():
            values.append(part[name])
        for name, column in texts.items():
            column.add_cells(part[name])
        rows.append(len(part["value"]))
        stamps.append(str(run.attrs.get("start_time", "")))
        names.append(shown(path))

    for unit in files:
        if not isinstance(unit, NodeFolder):
            read(unit)
            continue
        got, why = summary.read(unit.folder, unit.files)
        if got is None:
            notes.append(f"{shown(unit.folder / summary.NAME)}: {why}; read the node's files")
            for path in unit.files:
                read(path)
            continue
        if night:
            got["columns"]["night"] = (np.zeros(sum(got["rows"]), dtype=np.int32), [night])
        for name, values in numbers.items():
            values.append(got["columns"][name])
        for name, column in texts.items():
            column.add(*got["columns"][name])
        rows += got["rows"]
        stamps += got["stamps"]
        names += got["names"]
        for path in got["again"]:  # unreadable when summarised: read to say why, again
            read(path)
    columns: dict[str, Any] = {c: t.coded() for c, t in texts.items()}
    columns.update({c: np.concatenate(v) if v else
                    np.array([], dtype=bool if c in ("higher_is_better", "synthetic") else float)
                    for c, v in numbers.items()})
    return {"columns": columns, "rows": rows, "stamps": stamps, "names": names,
            "rejected": rejected, "broken": broken, "notes": notes}


class Texts:
    """A text column as int32 codes into one list of its distinct texts. A fleet's text
    cells repeat a few thousand texts millions of times: a chunk sends its codes and texts
    between processes, not a str object per cell, and the fleet table's cells are pointers
    to one str per text."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.parts: list[np.ndarray] = []

    def add(self, codes: np.ndarray, texts: Sequence[Any]) -> None:
        remap = np.fromiter((self.index.setdefault(t, len(self.index)) for t in texts),
                            dtype=np.int32, count=len(texts))
        self.parts.append(remap[codes] if len(codes) else np.array([], dtype=np.int32))

    def add_cells(self, cells: np.ndarray) -> None:
        codes, texts = pd.factorize(cells, use_na_sentinel=False)
        self.add(codes, list(texts))

    def coded(self) -> tuple[np.ndarray, list[Any]]:
        codes = np.concatenate(self.parts) if self.parts else np.array([], dtype=np.int32)
        return codes, list(self.index)

    def cells(self) -> np.ndarray:
        codes, texts = self.coded()
        return np.array(texts + [None], dtype=object)[codes]


def _joined(parts: list[Any], name: str) -> np.ndarray:
    """One column of the chunks: numbers concatenated, texts (codes, texts) decoded once."""
    if name not in _TEXT_COLUMNS:
        return np.concatenate(parts)
    texts = Texts()
    for codes, distinct in parts:
        texts.add(codes, distinct)
    return texts.cells()


def _newest(table: pd.DataFrame, origin: np.ndarray, stamps: Sequence[str],
            names: Sequence[str], notes: list[str], nights: bool = False) -> pd.DataFrame:
    """One row per (node, family, path, metric), or per night as well: the newest file's."""
    stamp = pd.Series(np.asarray(stamps, dtype=object)[origin], index=table.index)
    order = stamp.sort_values(ascending=False, kind="stable").index
    keys = ["node", "family", "path", "metric"] + (["night"] if nights else [])
    older = table.loc[order].duplicated(keys, keep="first")
    dropped = older[older].index
    if dropped.empty:
        return table
    newest = stamp.groupby(table["node"]).max()
    for index in sorted(set(origin[dropped].tolist())):
        host = table.at[dropped[origin[dropped] == index][0], "node"]
        notes.append(f"{names[index]}: host {host} appears again with the same cases; kept "
                     f"the newest run (start_time {newest[host]})")
    return table.drop(index=dropped).reset_index(drop=True)
