"""The fleet's result files read into one fleet table (table.py's columns): folders
expanded, the files of one host merged, the newest run kept where two hold a case.

A fleet is tens of thousands of small files, and reading them is most of the analysis:
they are read by a pool of processes, each given a chunk of files and returning numpy
column arrays (never DataFrames or per-row objects), concatenated here in file order, so
that the table is the same however many processes read it."""
from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..results.io import RunFileError, shown
from .table import COLUMNS, SPREAD, WORDS, fleet_columns, load_cases_run

#: Files a process reads per task: large enough that a task's overhead (one pickled
#: answer) is small against its reads, small enough that 2 processes stay evenly busy.
CHUNK_FILES = 256
#: Below this many files one process reads them all: a pool costs more than it saves.
PARALLEL_MIN_FILES = 64
#: Beside COLUMNS: the file (as shown) a row came from; integrity.py holds a node's files
#: against its plan and names the file in a reason.
FILE = "file"
_TEXT_COLUMNS = tuple(c for c in (*COLUMNS, WORDS) if c not in ("value", "higher_is_better",
                                                                  "synthetic"))


def first_pass(folder: Path, pattern: str) -> list[Path]:
    """The files matching ``pattern`` below ``folder`` (recursively), but for those in a
    ``retest`` folder below it: a retest pass is read with --retest only."""
    return sorted(f for f in folder.rglob(pattern) if "retest" not in f.relative_to(folder).parts[:-1])


def result_files(paths: Sequence[Path]) -> list[Path]:
    """RUNS: files as given, folders expanded to their first-pass .h5 files."""
    files: list[Path] = []
    for path in paths:
        files.extend(first_pass(path, "*.h5") if path.is_dir() else [path])
    return files


#: At most this many reading processes: each holds its own caches and interpreter (about
#: 100 MB), and a login node's hundred CPUs would cost more memory than they save time.
MAX_JOBS = 16


def default_jobs() -> int:
    """The processes that read: the CPUs this process may run on, at most MAX_JOBS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_JOBS))


def load_fleet(paths: Sequence[Path], rejected: list[str], notes: list[str],
               night: str | None = None, jobs: int | None = None,
               nights: bool = False,
               broken: list[tuple[Path, str]] | None = None) -> pd.DataFrame:
    """The fleet table of every usable file; a bad file is one line in ``rejected`` and,
    where ``broken`` is given, (path, error) there, so that integrity.py can blame its node.
    Beside COLUMNS and WORDS, column FILE names the file each row came from.

    The files of one host are merged (a node's checks may write one file each); where two
    hold the same case, the run with the newest start_time is kept and each older file is
    one line in ``notes``. ``night`` files every row under that night (fleet-history
    append --night); ``nights``: files of other nights are not older runs (the history
    takes several nights at once); ``jobs`` processes read (default: the CPUs available)."""
    chunks = read_files(result_files(paths), night, jobs)
    rejected.extend(line for chunk in chunks for line in chunk["rejected"])
    if broken is not None:
        broken.extend(pair for chunk in chunks for pair in chunk["broken"])
    rows = [n for chunk in chunks for n in chunk["rows"]]
    if not rows:
        raise InputError("no usable mempath result file among RUNS; valid: .h5 files or "
                         "folders of them (docs/schema.md)")
    shared: dict[Any, Any] = {}
    table = pd.DataFrame({c: _joined([chunk["columns"][c] for chunk in chunks], c, shared)
                          for c in (*COLUMNS, WORDS, SPREAD)})
    stamps = [s for chunk in chunks for s in chunk["stamps"]]
    names = [n for chunk in chunks for n in chunk["names"]]
    origin = np.repeat(np.arange(len(rows)), rows)
    files = pd.Categorical(names)  # a file named twice in RUNS is one category
    table[FILE] = pd.Categorical.from_codes(files.codes[origin], files.categories)
    return _newest(table, origin, stamps, names, notes, nights)


def read_files(files: Sequence[Path], night: str | None = None,
               jobs: int | None = None) -> list[dict[str, Any]]:
    """read_chunk() of every chunk of ``files``, in file order."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    chunks = [files[i:i + CHUNK_FILES] for i in range(0, len(files), CHUNK_FILES)]
    if jobs == 1 or len(files) < PARALLEL_MIN_FILES or len(chunks) < 2:
        return [read_chunk(chunk, night) for chunk in chunks]
    try:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(chunks)))
    except (OSError, NotImplementedError):  # no process semaphores (some containers)
        return [read_chunk(chunk, night) for chunk in chunks]
    with pool:
        return list(pool.map(read_chunk, chunks, [night] * len(chunks)))


def read_chunk(files: Sequence[Path], night: str | None = None) -> dict[str, Any]:
    """The fleet columns of some files, concatenated: per usable file its row count,
    start_time and shown name; per unusable file its one line and (path, line)."""
    parts, rows, stamps, names, rejected, broken = [], [], [], [], [], []
    for path in files:
        try:
            run = load_cases_run(path)
        except RunFileError as error:
            rejected.append(str(error))
            broken.append((path, str(error)))
            continue
        part = fleet_columns(run, night)
        parts.append(part)
        rows.append(len(part["value"]))
        stamps.append(str(run.attrs.get("start_time", "")))
        names.append(shown(path))
    columns = {c: np.concatenate([p[c] for p in parts]) if parts else
               np.array([], dtype=float if c in ("value", SPREAD) else
                        bool if c in ("higher_is_better", "synthetic") else object)
               for c in (*COLUMNS, WORDS, SPREAD)}
    return {"columns": columns, "rows": rows, "stamps": stamps, "names": names,
            "rejected": rejected, "broken": broken}


def _joined(arrays: list[np.ndarray], name: str, shared: dict[Any, Any]) -> np.ndarray:
    """One column of the chunks; a text column's cells made one shared str per text (each
    chunk came back from its process with its own copies)."""
    if name not in _TEXT_COLUMNS:
        return np.concatenate(arrays)
    out = []
    for array in arrays:
        codes, uniques = pd.factorize(array, use_na_sentinel=False)
        canonical = np.array([shared.setdefault(u, u) for u in uniques], dtype=object)
        out.append(canonical[codes] if len(array) else array)
    return np.concatenate(out) if out else np.array([], dtype=object)


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
