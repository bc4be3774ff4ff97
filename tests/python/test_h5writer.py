"""analysis/results/h5writer.py writes what the C++ writer (src/core/results.cpp) writes: the same
table read back from a `mempath bw` file and rewritten in Python has the same structure."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from analysis.results.families import columns
from analysis.results.h5writer import Column, column, kind_of, table_columns, units_of, write_result
from analysis.results.io import load_run
from conftest import REPO, run


def structure(path: Path) -> dict[str, object]:
    """Everything but the values: attribute and dataset types (string sets, sizes), shapes,
    layout, units."""
    def type_of(tid: h5py.h5t.TypeID) -> tuple:
        if isinstance(tid, h5py.h5t.TypeStringID):
            return ("string", tid.is_variable_str(), tid.get_cset())
        return (type(tid).__name__, tid.get_size(), tid.get_order())

    out: dict[str, object] = {}
    with h5py.File(path, "r") as f:
        for name in f.attrs:
            attr = h5py.h5a.open(f.id, name.encode())
            out[f"@{name}"] = (type_of(attr.get_type()), attr.shape)

        def visit(name: str, obj: object) -> None:
            if isinstance(obj, h5py.Dataset):
                units = h5py.h5a.open(obj.id, b"units")
                out[name] = (type_of(obj.id.get_type()), obj.shape, obj.chunks, obj.compression,
                             obj.id.get_create_plist().get_layout(), type_of(units.get_type()),
                             obj.attrs["units"])
            else:
                out[name] = "group"
        f.visititems(visit)
    return out


@pytest.fixture(scope="module")
def cpp_file(mempath_cpu_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cpp") / "bw.h5"
    run(mempath_cpu_bin, "bw", "--size", "64MiB", "--in-cache", "--reps", "2", "--output", str(path))
    return path


def rewritten(source: Path, target: Path) -> Path:
    """``source``'s attributes and tables written again by the Python writer."""
    with h5py.File(source, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v.item() if isinstance(v, np.generic) else v)
                 for k, v in f.attrs.items()}
        tables = {}
        names = ["bw/cases", "bw/samples"] + [f"conditions/{t}" for t in f.get("conditions", {})]
        for table in names:
            tables[table] = [column(name, ds.asstr()[()] if h5py.check_string_dtype(ds.dtype) else ds[()],
                                    None if len(ds) else {"i": int, "f": float}.get(ds.dtype.kind, str))
                             for name, ds in f[table].items()]
    return write_result(target, attrs, tables)


def test_python_writer_matches_the_cpp_writer(cpp_file: Path, tmp_path: Path) -> None:
    python_file = rewritten(cpp_file, tmp_path / "py.h5")
    assert structure(python_file) == structure(cpp_file)
    with h5py.File(cpp_file) as a, h5py.File(python_file) as b:
        for table in ("bw/cases", "bw/samples"):
            for name in a[table]:
                x, y = a[table][name][()], b[table][name][()]
                assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


def test_units_follow_the_cpp_tables(cpp_file: Path) -> None:
    with h5py.File(cpp_file) as f:
        tables = ("bw/cases", "bw/samples", *(f"conditions/{t}" for t in f["conditions"]))  # issue 40
        units = {name: f[t][name].attrs["units"] for t in tables for name in f[t]}
    assert {name: units_of(name) for name in units} == units
    assert units["time_s"] == "s" and units["median_GBps"] == "GB/s"  # the rule is not all ""


def test_the_file_appears_whole_and_update_replaces_only_the_tables_given(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    write_result(path, {"tool": "mempath", "host": "n1"},
                 {"a/cases": [Column("x", int, "", [1, 2])], "b/cases": [Column("y", str, "", ["é", ""])]})
    write_result(path, {"extra": 3}, {"a/cases": [Column("x", int, "", [7])]}, update=True)
    assert [p.name for p in tmp_path.iterdir()] == ["run.h5"]  # no temporary file left
    with h5py.File(path) as f:
        assert f.attrs["schema_version"] == 1 and f.attrs["host"] == "n1" and f.attrs["extra"] == 3
        assert list(f["a/cases/x"][()]) == [7]
        assert list(f["b/cases/y"].asstr()[()]) == ["é", ""]


def test_bad_columns_leave_no_file(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    with pytest.raises(ValueError, match="different lengths"):
        write_result(path, {}, {"t/cases": [Column("a", int, "", [1]), Column("b", int, "", [1, 2])]})
    with pytest.raises(TypeError, match="valid: int, float or str"):
        write_result(path, {}, {"t/cases": [Column("a", bytes, "", [b"x"])]})
    with pytest.raises(TypeError, match="valid: int or str"):
        write_result(path, {"f": 1.5}, {})
    assert list(tmp_path.iterdir()) == []


def test_kinds_from_numpy() -> None:
    assert kind_of(np.array([True])) is int and kind_of(np.arange(3)) is int
    assert kind_of(np.array([0.5])) is float and kind_of(np.array(["a"], dtype=object)) is str


# A value of each column's type, by families.def's type names.
VALUE = {"Int": 1, "Float": 0.5, "String": "x"}


def test_a_table_of_families_def_is_written_with_its_columns_and_units(tmp_path: Path) -> None:
    """table_columns gives a table's rows families.def's columns, kinds and units, as the C++
    writer writes them (the LLM decode's tables, once written by a Python script)."""
    out = tmp_path / "llm.h5"
    case, sample = ({c.name: VALUE[c.type] for c in columns(f"llm/{t}")} for t in ("cases", "samples"))
    write_result(out, {"tool": "mempath", "schema_version": 1, "host": "n1"},
                 {"llm/cases": table_columns("llm/cases", [case]),
                  "llm/samples": table_columns("llm/samples", [sample, sample])})
    run = load_run(out)
    assert len(run.tables["llm/cases"]) == 1 and len(run.tables["llm/samples"]) == 2
    assert set(run.tables["llm/cases"].columns) == {c.name for c in columns("llm/cases")}
    with h5py.File(out) as f:
        assert f["llm/cases/median_tokens_per_s"].attrs["units"] == "tokens/s"
        assert f["llm/cases/path_GBps"].attrs["units"] == "GB/s"


def test_inventory_appends_its_table_and_keeps_the_run(cpp_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    path.write_bytes(cpp_file.read_bytes())
    # As `python3 -m slurm.inventory` runs: from the repository root, first on the path.
    script = ("import sys; from pathlib import Path; from slurm import inventory as inv; "
              "row = {c: 0 if c in ('rank', 'local_rank') else 'v\\x00' for c in inv.COLUMNS}; "
              "inv.write(Path(sys.argv[1]), [row, {**row, 'rank': 1}])")
    proc = subprocess.run([sys.executable, "-c", script, str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    run = load_run(path)
    assert list(run.tables["inventory/ranks"]["rank"]) == [0, 1]
    assert set(run.tables["inventory/ranks"]["host"]) == {"v"}  # NULs dropped
    assert len(run.tables["bw/cases"]) == 1 and run.attrs["tool_version"]  # the run is kept
