"""`mempath export`: a real run's HDF5 file as CSV and JSON, compared cell by cell with
h5py's view of the same file, and its bad input (one line, exit 2)."""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from conftest import run


@pytest.fixture(scope="module")
def real_run(mempath_cpu_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "run.h5"
    run(mempath_cpu_bin, "bw", "--all", "--op", "read,copy", "--threads", "all", "--size", "16MiB",
        "--in-cache", "--reps", "2", "--warmup", "0", "--output", str(out))
    return out


def h5_tables(path: Path) -> dict[str, dict[str, np.ndarray]]:
    tables: dict[str, dict[str, np.ndarray]] = {}

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            table, _, column = name.rpartition("/")
            tables.setdefault(table, {})[column] = obj[()]
    with h5py.File(path) as f:
        f.visititems(visit)
    return tables


def same(ours: object, theirs: object) -> bool:
    if isinstance(theirs, bytes):
        return ours == theirs.decode()
    if isinstance(theirs, (float, np.floating)) and math.isnan(theirs):
        return ours is None or (isinstance(ours, float) and math.isnan(ours))
    return ours == theirs


def test_csv_of_one_table_to_stdout_matches_h5py(mempath_cpu_bin: Path, real_run: Path) -> None:
    expected = h5_tables(real_run)
    for name in ("bw/cases", "bw/samples"):
        text = run(mempath_cpu_bin, "export", str(real_run), "--table", name).stdout
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
        assert list(frame.columns) == sorted(expected[name])  # h5py's (name) order
        for column, values in expected[name].items():
            got = frame[column].tolist()
            assert len(got) == len(values) and len(got) > 0, (name, column)
            for ours, theirs in zip(got, values):
                if isinstance(theirs, bytes):  # an empty string cell reads back as NaN
                    ours = "" if isinstance(ours, float) and math.isnan(ours) else str(ours)
                assert same(ours, theirs), (name, column, ours, theirs)


def test_csv_of_every_table_goes_to_a_folder(mempath_cpu_bin: Path, real_run: Path, tmp_path: Path) -> None:
    folder = tmp_path / "csv"
    run(mempath_cpu_bin, "export", str(real_run), "-o", str(folder))
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.csv"))
    assert written == ["bw/cases.csv", "bw/samples.csv",  # and the conditions of its cases (issue 40)
                       "conditions/cpus.csv", "conditions/gpus.csv", "conditions/readings.csv", "conditions/windows.csv"]
    frame = pd.read_csv(folder / "bw" / "cases.csv")
    assert len(frame) == len(h5_tables(real_run)["bw/cases"]["case_id"])
    again = run(mempath_cpu_bin, "export", str(real_run), "-o", str(folder), check_rc=2)
    assert "exists" in again.stderr and again.stderr.count("\n") == 1
    run(mempath_cpu_bin, "export", str(real_run), "-o", str(folder), "--overwrite")


def test_json_holds_the_attributes_and_every_table(mempath_cpu_bin: Path, real_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    run(mempath_cpu_bin, "export", str(real_run), "--format", "json", "-o", str(target))
    doc = json.loads(target.read_text())
    with h5py.File(real_run) as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        units = {name: {c: f[name][c].attrs["units"] for c in f[name]} for name in h5_tables(real_run)}
    assert doc["attributes"] == {k: (v if isinstance(v, str) else int(v)) for k, v in attrs.items()}
    expected = h5_tables(real_run)
    assert set(doc["tables"]) == set(expected)
    for name, columns in expected.items():
        table = doc["tables"][name]
        assert table["units"] == units[name]
        assert len(table["rows"]) == len(next(iter(columns.values())))
        for r, row in enumerate(table["rows"]):
            assert list(row) == sorted(columns)
            for column, values in columns.items():
                assert same(row[column], values[r]), (name, column, r)


def test_json_of_one_table_to_stdout(mempath_cpu_bin: Path, real_run: Path) -> None:
    doc = json.loads(run(mempath_cpu_bin, "export", str(real_run), "--format", "json",
                         "--table", "bw/cases").stdout)
    assert list(doc["tables"]) == ["bw/cases"] and doc["attributes"]["tool"] == "mempath"


@pytest.mark.parametrize("args, message", [
    (["MISSING"], "No such file"),
    (["TEXT"], "not an HDF5 file"),
    (["RUN", "--table", "bw/nope"], "no table 'bw/nope'"),
    (["RUN", "--format", "xml"], "valid: csv, json"),
    (["RUN", "-o", "-"], "--table for stdout"),
    ([], "name the result file first"),
])
def test_bad_input_is_one_line_and_exit_2(mempath_cpu_bin: Path, real_run: Path, tmp_path: Path,
                                          args: list[str], message: str) -> None:
    text = tmp_path / "not.h5"
    text.write_text("plain text\n")
    names = {"MISSING": str(tmp_path / "missing.h5"), "TEXT": str(text), "RUN": str(real_run)}
    proc = run(mempath_cpu_bin, "export", *[names.get(a, a) for a in args], check_rc=2)
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""
