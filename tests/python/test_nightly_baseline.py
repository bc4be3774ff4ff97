"""The nightly baseline lives in a database, not only in the scratch folder (issue 22):
a purged last-good folder is no reason for a slower night to become the reference; no
baseline is a loud exit 2 before ReFrame runs; a relative MEMPATH_NIGHTLY_DIR works. And the
history database survives a full disk: one line, exit 1, the rows as they were; one bad
fleet.parquet among good ones is named while the others are stored."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb")  # a GPU node's Python may lack it: skipped, not a collection error

from test_compare import STUB, bw_run, night  # noqa: E402
from test_fleet_history import fleet_frame, stored  # noqa: E402

from analysis.__main__ import main  # noqa: E402
from analysis.fleet import history as fh  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


# ---- the nightly ---------------------------------------------------------------------------

def test_a_purged_last_good_folder_does_not_let_a_slower_night_through(tmp_path: Path) -> None:
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0, "numa1": 120.0})
    slower = bw_run(tmp_path / "slower.h5", {"numa0": 225.0, "numa1": 120.0})  # 50 % slower
    first = night(tmp_path, good)
    assert first.returncode == 0 and "first reference" in first.stdout, first.stdout + first.stderr
    shutil.rmtree(os.path.realpath(tmp_path / "nights" / "last-good"))  # the scratch purge
    bad = night(tmp_path, slower)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "regression against the baseline of night" in bad.stderr and "REGRESSION bw" in bad.stderr


def test_no_baseline_is_a_loud_exit_2_before_anything_runs(tmp_path: Path) -> None:
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0})
    proc = night(tmp_path, good, MEMPATH_NIGHTLY_FIRST="0")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1 and "no baseline to compare with" in errors[0], proc.stderr
    assert "MEMPATH_NIGHTLY_FIRST=1" in errors[0]
    assert not (tmp_path / "nights" / "last-good").exists()
    assert not list((tmp_path / "nights").glob("*/rfm")), "ReFrame ran without a baseline"


def test_a_first_night_is_refused_while_a_baseline_exists(tmp_path: Path) -> None:
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0})
    assert night(tmp_path, good).returncode == 0
    again = night(tmp_path, good, MEMPATH_NIGHTLY_FIRST="1")
    assert again.returncode == 2 and "unset MEMPATH_NIGHTLY_FIRST" in again.stderr, again.stderr


def test_the_old_last_good_folder_becomes_the_baseline(tmp_path: Path) -> None:
    """A nightly that ran before the database: its last-good folder is taken over once."""
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0})
    assert night(tmp_path, good).returncode == 0
    (tmp_path / "nightly.duckdb").unlink()
    moved = night(tmp_path, good, MEMPATH_NIGHTLY_FIRST="0")
    assert moved.returncode == 0 and "now kept in" in moved.stdout, moved.stdout + moved.stderr


def test_a_relative_nightly_folder_works(tmp_path: Path) -> None:
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0})
    stub = tmp_path / "reframe"
    stub.write_text(STUB)
    stub.chmod(0o755)
    env = {**os.environ, "MEMPATH_NIGHTLY_DIR": "nights", "MEMPATH_NIGHTLY_DB": "base.duckdb",
           "MEMPATH_NIGHTLY_FIRST": "1", "MEMPATH_REFRAME": str(stub), "MEMPATH_PYTHON": sys.executable,
           "NIGHT_SRC": str(good)}
    proc = subprocess.run(["bash", str(REPO / "slurm" / "nightly.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "nights" / "last-good" / "report").is_dir() and (tmp_path / "base.duckdb").is_file()


# ---- the database: baselines, full disks, bad files -------------------------------------

def test_a_baseline_round_trips_with_its_night(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "night" / "rfm" / "output"
    (src / "MempathBandwidth").mkdir(parents=True)
    bw_run(src / "MempathBandwidth" / "bw.h5", {"numa0": 450.0})
    db = tmp_path / "h.duckdb"
    assert main(["fleet-history", "baseline-store", "--db", str(db), "--series", "s",
                 "--night", "20261124T020000", str(src)]) == 0
    assert main(["fleet-history", "baseline-get", "--db", str(db), "--series", "s", "-o", str(tmp_path / "b")]) == 0
    assert "baseline night=20261124T020000 files=1" in capsys.readouterr().out
    assert (tmp_path / "b" / "MempathBandwidth" / "bw.h5").read_bytes() == (src / "MempathBandwidth" / "bw.h5").read_bytes()
    assert main(["fleet-history", "baseline-get", "--db", str(db), "--series", "other", "-o", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no nightly baseline for 'other'" in err[0]


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MiB tmpfs (root only): a full disk that is really full."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def test_a_full_disk_is_one_line_exit_1_and_the_history_as_it_was(
        small_disk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = small_disk / "h.duckdb"
    first = fleet_frame(range(1), 3)
    fh.append(db, first)
    big = fleet_frame(range(1, 40), 60, seed=3)
    table = tmp_path / "fleet.parquet"
    con = duckdb.connect()
    con.register("rows", big)
    con.execute(f"COPY rows TO '{table}' (FORMAT parquet)")
    con.close()
    filler = fill(small_disk)
    code = main(["fleet-history", "append", "--db", str(db), str(table)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "were not stored, the database is as it was" in err[0] and "Traceback" not in err[0]
    filler.unlink()
    assert len(stored(db)) == len(first)
    # The baseline alike: a store that does not fit keeps the one before.
    src = tmp_path / "night"
    src.mkdir()
    bw_run(src / "bw.h5", {"numa0": 450.0})
    fh.store_baseline(db, "s", "n1", src)
    (src / "big.h5").write_bytes(os.urandom(3 << 20))
    fill(small_disk)
    code = main(["fleet-history", "baseline-store", "--db", str(db), "--series", "s", "--night", "n2", str(src)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "not stored" in err[0], err
    (small_disk / "filler").unlink()
    assert fh.baseline_night(db, "s") == "n1"


def test_one_bad_table_is_named_and_the_others_are_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tables = []
    for i, nodes in enumerate((2, 3)):
        path = tmp_path / f"t{i}" / "fleet.parquet"
        path.parent.mkdir()
        con = duckdb.connect()
        con.register("rows", fleet_frame(range(i, i + 1), nodes, seed=i))
        con.execute(f"COPY rows TO '{path}' (FORMAT parquet)")
        con.close()
        tables.append(path)
    bad = tmp_path / "bad" / "fleet.parquet"
    bad.parent.mkdir()
    bad.write_text("not parquet")
    db = tmp_path / "h.duckdb"
    code = main(["fleet-history", "append", "--db", str(db), str(tables[0]), str(bad), str(tables[1])])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "bad/fleet.parquet" in err[0], err
    assert len(stored(db)) == (2 + 3) * 2
