"""The fleet's result files read into one fleet table (table.py's columns): folders
expanded, the files of one host merged, the newest run kept where two hold a case."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..results.io import RunFileError, shown
from .table import COLUMNS, SPREAD, WORDS, fleet_columns, load_cases_run

#: Beside COLUMNS: the file (as shown) a row came from; integrity.py holds a node's files
#: against its plan and names the file in a reason.
FILE = "file"


def result_files(paths: Sequence[Path]) -> list[Path]:
    """RUNS: files as given, folders expanded to their .h5 files (recursively), but for
    those in a ``retest`` folder below it: a retest pass is read with --retest only."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(f for f in path.rglob("*.h5")
                            if "retest" not in f.relative_to(path).parts[:-1])
                     if path.is_dir() else [path])
    return files

def load_fleet(paths: Sequence[Path], rejected: list[str], notes: list[str],
               broken: list[tuple[Path, str]] | None = None) -> pd.DataFrame:
    """The fleet table of every usable file; a bad file is one line in ``rejected`` and,
    where ``broken`` is given, (path, error) there, so that integrity.py can blame its node.
    Beside COLUMNS and WORDS, column FILE names the file each row came from.

    The files of one host are merged (a node's checks may write one file each); where two
    hold the same case, the run with the newest start_time is kept and each older file is
    one line in ``notes``."""
    parts, stamps, names = [], [], []
    for path in result_files(paths):
        try:
            run = load_cases_run(path)
        except RunFileError as error:
            rejected.append(str(error))
            if broken is not None:
                broken.append((path, str(error)))
            continue
        parts.append(fleet_columns(run))
        stamps.append(str(run.attrs.get("start_time", "")))
        names.append(shown(path))
    if not parts:
        raise InputError("no usable mempath result file among RUNS; valid: .h5 files or "
                         "folders of them (docs/schema.md)")
    table = pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in (*COLUMNS, WORDS, SPREAD)})
    origin = np.repeat(np.arange(len(parts)), [len(p["value"]) for p in parts])
    files = pd.Categorical(names)  # a file named twice in RUNS is one category
    table[FILE] = pd.Categorical.from_codes(files.codes[origin], files.categories)
    return _newest(table, origin, stamps, names, notes)

def _newest(table: pd.DataFrame, origin: np.ndarray, stamps: Sequence[str],
            names: Sequence[str], notes: list[str]) -> pd.DataFrame:
    """One row per (node, family, path, metric): the newest file's."""
    stamp = pd.Series([stamps[i] for i in origin], index=table.index)
    order = stamp.sort_values(ascending=False, kind="stable").index
    older = table.loc[order].duplicated(["node", "family", "path", "metric"], keep="first")
    dropped = older[older].index
    if dropped.empty:
        return table
    newest = stamp.groupby(table["node"]).max()
    for index in sorted(set(origin[dropped].tolist())):
        host = table.at[dropped[origin[dropped] == index][0], "node"]
        notes.append(f"{names[index]}: host {host} appears again with the same cases; kept "
                     f"the newest run (start_time {newest[host]})")
    return table.drop(index=dropped).reset_index(drop=True)
