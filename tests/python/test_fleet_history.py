"""The fleet history database (issue 11 item 3; docs/fleet_history.md).

The frames come from a small generator of the fleet table's schema (fleet_schema.md), so
these tests do not wait for analysis/fleet/table.py.
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import numpy as np
import h5py
import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb")

from analysis.fleet import history as fh  # noqa: E402
from analysis.__main__ import main  # noqa: E402
from analysis.errors import InputError  # noqa: E402
from conftest import assert_pdf  # noqa: E402

KIND = "aarch64/4s/4xNVIDIA GH200 120GB"
PATHS = [("bw read pu=gpu0 mem=gpu0 alloc=device kernel=grid threads=-1", "gpu0", "median_GBps", True, 3000.0),
         ("chase pu=cpu0 mem=numa0", "cpu0", "median_ns", False, 120.0)]


def night(i: int, first: str = "2026-08-01") -> str:
    return str(dt.date.fromisoformat(first) + dt.timedelta(days=i))


def fleet_frame(nights: range, nodes: int, *, noise: float = 0.01, offset_sd: float = 0.0,
                drift: dict[int, float] | None = None, drift_from: int = 0, synthetic: bool = False,
                seed: int = 0) -> pd.DataFrame:
    """Fleet rows: each node a persistent offset (node-to-node spread) and nightly noise;
    ``drift`` {node index: relative loss per night} from night ``drift_from`` on."""
    rng = np.random.default_rng(seed)
    offsets = 1 + rng.normal(0, offset_sd, nodes)
    rows = []
    for i in nights:
        for n in range(nodes):
            loss = (drift or {}).get(n, 0.0) * max(0, i - drift_from)
            for path, component, metric, hib, base in PATHS:
                factor = offsets[n] * (1 + rng.normal(0, noise)) * (1 - loss if hib else 1 + loss)
                rows.append({"night": night(i), "node": f"nid{n:05d}", "node_kind": KIND,
                             "family": path.split()[0], "path": path, "component": component,
                             "metric": metric, "value": base * factor, "status": "ok",
                             "higher_is_better": hib, "synthetic": synthetic,
                             "gpu_uuids": f"GPU-{n:04d}"})
    return pd.DataFrame(rows)


def stored(db: Path) -> pd.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT * FROM fleet").df()
    finally:
        con.close()


def test_append_twice_is_idempotent(tmp_path: Path) -> None:
    """Duplicates (issue 11, history): re-appending a night replaces its rows."""
    db = tmp_path / "h.duckdb"
    frame = fleet_frame(range(2), 3)
    fh.append(db, frame)
    changed = frame.assign(value=frame["value"] * 2)
    fh.append(db, changed)
    rows = stored(db)
    assert len(rows) == len(frame)
    assert np.allclose(np.sort(rows["value"]), np.sort(changed["value"]))


def test_the_fleet_spread_follows_a_reappended_night(tmp_path: Path) -> None:
    """Stale summaries (issue 11, history): the stored per-night median is the new night's."""
    db = tmp_path / "h.duckdb"
    frame = fleet_frame(range(2), 5)
    fh.append(db, frame)
    fh.append(db, frame.assign(value=frame["value"] * 2))
    con = duckdb.connect(str(db), read_only=True)
    spread = con.execute("SELECT night, path, med FROM fleet_spread").df()
    con.close()
    expected = frame.assign(value=frame["value"] * 2).groupby(["night", "path"])["value"].median()
    assert len(spread) == len(expected)
    got = spread.assign(night=spread["night"].astype(str)).set_index(["night", "path"])["med"]
    assert np.allclose(got.loc[expected.index], expected)


def test_reappending_some_nodes_keeps_the_others(tmp_path: Path) -> None:
    """Partial nights (issue 11 bad input): a night appended again for one node keeps the rest."""
    db = tmp_path / "h.duckdb"
    frame = fleet_frame(range(1), 3)
    fh.append(db, frame)
    fh.append(db, frame[frame["node"] == "nid00001"])
    assert len(stored(db)) == len(frame)


def test_synthetic_rows_are_left_out_unless_asked(tmp_path: Path) -> None:
    """Synthetic results never mixed with real ones (issue 11 item 4)."""
    db = tmp_path / "h.duckdb"
    fh.append(db, fleet_frame(range(3), 2))
    fh.append(db, fleet_frame(range(3), 4, synthetic=True).query("node >= 'nid00002'"))
    assert set(fh.trend(db)["node"]) == {"nid00000", "nid00001"}
    assert len(set(fh.trend(db, include_synthetic=True)["node"])) == 4
    assert stored(db)["synthetic"].sum() == 2 * 3 * len(PATHS)


def test_trend_is_one_row_per_series_and_one_column_per_night(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    fh.append(db, fleet_frame(range(10), 2))
    table = fh.trend(db, node="nid00001", nights=4)
    assert list(table["node"]) == ["nid00001"] * len(PATHS)
    assert [c for c in table.columns if c not in fh.SERIES] == [night(i) for i in range(6, 10)]


@pytest.fixture(scope="module")
def fleet_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """90 nights of 201 nodes; nid00007 loses 0.3 %/night over the last 60 nights."""
    db = tmp_path_factory.mktemp("fleet") / "h.duckdb"
    fh.append(db, fleet_frame(range(90), 201, offset_sd=0.08, drift={7: 0.003}, drift_from=30,
                              seed=11))
    return db


def test_slow_degradation_finds_the_drifting_node(fleet_db: Path) -> None:
    """Slow degradation (issue 11 item 3): 18 % lost in 60 nights, within the fleet's spread."""
    table = fh.slow_degradation(fleet_db, nights=90, min_drop=0.05)
    assert set(table["node"]) == {"nid00007"}
    assert set(table["metric"]) == {"median_GBps", "median_ns"}
    assert table["loss"].between(0.10, 0.25).all()
    assert table["within_spread"].all()  # the per-night z-score alone misses it


def test_slow_degradation_finds_nothing_in_steady_noise(tmp_path: Path) -> None:
    """False positives (issue 11 measured): steady noisy nodes are never called degrading."""
    db = tmp_path / "h.duckdb"
    fh.append(db, fleet_frame(range(90), 200, noise=0.03, offset_sd=0.08, seed=5))
    assert fh.slow_degradation(db).empty


def test_theil_sen_ignores_outlier_nights() -> None:
    x = np.arange(20.0)
    y = 100 - 0.5 * x
    y[[3, 17]] = [10, 500]
    slope, intercept = fh.theil_sen(x, y)
    assert slope == pytest.approx(-0.5) and intercept == pytest.approx(100)


@pytest.mark.parametrize("broken", [
    lambda f: f.drop(columns="metric"),
    lambda f: f.assign(night=["2026-13-40"] + list(f["night"][1:])),
    lambda f: f.assign(value=["fast"] + list(f["value"][1:])),
])
def test_a_bad_frame_writes_nothing(tmp_path: Path, broken) -> None:
    """Corrupt input (issue 11 bad input): one InputError, the stored nights untouched."""
    db = tmp_path / "h.duckdb"
    good = fleet_frame(range(1), 2)
    fh.append(db, good)
    with pytest.raises(InputError):
        fh.append(db, broken(fleet_frame(range(1), 3, seed=1)))
    assert np.allclose(np.sort(stored(db)["value"]), np.sort(good["value"]))


def test_a_failing_insert_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Atomic append (issue 11 'nothing lost'): an error after the delete restores the night."""
    db = tmp_path / "h.duckdb"
    good = fleet_frame(range(1), 2)
    fh.append(db, good)
    monkeypatch.setattr(fh, "COLUMNS", {**fh.COLUMNS, "no_such_column": "DOUBLE"})
    with pytest.raises(Exception):
        fh.append(db, good.assign(no_such_column=1.0))
    monkeypatch.undo()
    assert len(stored(db)) == len(good)


def _node_file(folder: Path, host: str, day: str, median: float) -> Path:
    from h5fixtures import case, topology, write_run
    topo = {**topology("gh200_quad"), "host": host}
    return write_run(folder / f"{host}-{day}.h5", [case(median_GBps=median), case(pu="gpu0", mem="gpu0", alloc="device")],
                     topology=topo, attrs={"start_time": f"{day}T01:00:00Z"})


def test_cli_append_and_trend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line (issue 11 item 3): nights of files in, trend CSV and PNG out."""
    db = tmp_path / "h.duckdb"
    for i in range(3):
        files = [_node_file(tmp_path, f"nid{n}", night(i), 100.0 + n) for n in range(2)]
        assert main(["fleet-history", "append", "--db", str(db), *map(str, files)]) == 0
    assert main(["fleet-history", "append", "--db", str(db), str(files[0])]) == 0  # again: no duplicate
    out = tmp_path / "out"
    assert main(["fleet-history", "trend", "--db", str(db), "--node", "nid1", "-o", str(out)]) == 0
    table = pd.read_csv(out / "trend.csv")
    assert set(table["node"]) == {"nid1"} and len(table) == 2
    assert table.filter(like="2026-").shape == (2, 3)
    assert sorted(table.filter(like="2026-").iloc[:, -1]) == [100.0, 101.0]
    assert (out / "worst_trends.png").stat().st_size > 0
    assert_pdf(out / "worst_trends.pdf")
    assert (out / "slow_degradation.csv").is_file()


@pytest.mark.parametrize("argv, says", [
    (["trend", "--db", "{tmp}/none.duckdb", "-o", "{tmp}/o"], "no such history database"),
    (["trend", "--db", "{tmp}/junk.duckdb", "-o", "{tmp}/o"], "not a usable fleet history database"),
    (["trend", "--db", "{tmp}/empty.duckdb", "-o", "{tmp}/o"], "holds no rows"),
    (["append", "--db", "{tmp}/h.duckdb", "--night", "yesterday", "{tmp}/a.h5"], "is not a date"),
    (["trend", "--db", "{tmp}/h.duckdb", "--nights", "0", "-o", "{tmp}/o"], "not positive"),
    (["trend", "--db", "{tmp}/h.duckdb", "--nights", "1000000", "-o", "{tmp}/o"], "out of range"),  # issue 22
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              argv: list[str], says: str) -> None:
    """Bad input (issue 12 standard): one line on stderr, exit 2, the database unchanged."""
    (tmp_path / "junk.duckdb").write_text("not a database")
    fh.append(tmp_path / "h.duckdb", fleet_frame(range(1), 1))
    fh.append(tmp_path / "empty.duckdb", fleet_frame(range(1), 1).iloc[0:0])
    _node_file(tmp_path, "a", night(0), 100.0).rename(tmp_path / "a.h5")
    before = len(stored(tmp_path / "h.duckdb"))
    code = main(["fleet-history", *[a.format(tmp=tmp_path) for a in argv]])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0], err
    assert len(stored(tmp_path / "h.duckdb")) == before


def test_cli_a_corrupt_file_among_good_ones_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21: a corrupt file is named in one line, its node failed (exit 1, one line
    counting the failed nodes), the other nodes stored."""
    db = tmp_path / "h.duckdb"
    good = [_node_file(tmp_path, f"nid{n}", night(0), 100.0) for n in range(2)]
    corrupt = tmp_path / "nid9.h5"
    corrupt.write_bytes(b"\x89HDF\r\n\x1a\n truncated")
    assert main(["fleet-history", "append", "--db", str(db), str(good[0]), str(corrupt), str(good[1])]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and sum("nid9.h5" in line for line in err) == 2, err
    assert err[0].startswith("analysis: error: 1 node(s) failed") and "nid9: nid9.h5: " in err[0]
    _refused_row_stored(db, "nid9")


def _refused_row_stored(db: Path, node: str) -> None:
    """Issue 40: the refused file's node is stored as docs/fleet_history.md says (the node
    was there that night): one row, status failed, no value, its path the file's name;
    before, nothing of it was stored while the command said its rows were."""
    rows = stored(db)
    assert set(rows["node"]) == {"nid0", "nid1", node}
    mine = rows[rows["node"] == node]
    assert len(mine) == 1 and mine["status"].tolist() == ["failed"] and mine["value"].isna().all()
    assert mine["path"].tolist() == [f"{node}.h5"] and str(mine["night"].iloc[0])[:10] == night(0)


def test_cli_a_file_of_unusable_start_time_among_good_ones_is_one_line(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33: one file whose start_time names no date stopped the whole append (exit 2,
    nothing stored); now its node is failed and named, the others stored (exit 1)."""
    db = tmp_path / "h.duckdb"
    good = [_node_file(tmp_path, f"nid{n}", night(0), 100.0) for n in range(2)]
    bad = _node_file(tmp_path, "nid9", night(0), 100.0)
    with h5py.File(bad, "r+") as handle:
        handle.attrs["start_time"] = "yesterday"
    assert main(["fleet-history", "append", "--db", str(db), str(good[0]), str(bad), str(good[1])]) == 1
    err = capsys.readouterr().err
    assert "nid9" in err and "start_time 'yesterday' is not a date" in err, err
    _refused_row_stored(db, bad.stem)  # a file outside a node folder is its stem's node


def test_cli_a_file_of_a_broken_topology_stores_its_node_failed(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 40: a refused file (its topology attribute not JSON) left nothing of its node in
    the history while the command said the node's rows were stored with status failed."""
    db = tmp_path / "h.duckdb"
    good = [_node_file(tmp_path, f"nid{n}", night(0), 100.0) for n in range(2)]
    bad = _node_file(tmp_path, "nid9", night(0), 100.0)
    with h5py.File(bad, "r+") as handle:
        handle.attrs["topology"] = "{not json"
    assert main(["fleet-history", "append", "--db", str(db), str(good[0]), str(bad), str(good[1])]) == 1
    err = capsys.readouterr().err
    assert "rows stored with status failed and no value" in err and "nid9" in err, err
    _refused_row_stored(db, bad.stem)


def test_fleet_history_option_appends_the_night_and_reports_the_slow_node(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`analysis fleet --history DB` (issue 11): nine simulated nights, one GPU's HBM losing
    1 % a night; the last night's report names the node's trend in words."""
    from tests.fleetsim.sim import simulate
    from analysis.fleet.table import fleet_rows
    from analysis.results.io import load_run
    db = tmp_path / "fleet.duckdb"
    for i in range(9):
        folder = tmp_path / f"night{i}"
        truth = simulate(8, "gh200_quad", f"hbm:1@{0.01 * (i + 1)}", folder, seed=4,
                         night=night(i))
        if i < 8:  # earlier nights through the history's own append
            fh.append(db, pd.concat([fleet_rows(load_run(f)) for f in folder.glob("*.h5")]))
    out = tmp_path / "report"
    assert main(["fleet", str(folder), "-o", str(out), "--history", str(db)]) == 0
    fault = truth["faults"][0]
    assert len(stored(db)["night"].unique()) == 9
    nodes = pd.read_csv(out / "nodes.csv", keep_default_na=False).set_index("node")
    trend = nodes.loc[fault["node"], "slow_trend"]
    assert re.match(rf"{fault['component']} HBM (as numa\d+ )?read ", trend) \
        and "over 9 nights" in trend, trend  # its HBM as device memory or as its NUMA node
    assert (nodes.drop(index=fault["node"])["slow_trend"] == "").all()
    summary = (out / "summary.md").read_text()
    assert "## Slowly degrading" in summary and fault["node"] in summary.split("## Slowly")[1]
    for name in ("trend.csv", "slow_degradation.csv", "worst_trends.png"):
        assert (out / name).stat().st_size > 0
    assert_pdf(out / "worst_trends.pdf")


@pytest.mark.parametrize("option", [["--nights", "0"], ["--min-drop", "5"],
                                    ["--nights", "1000000"]])  # issue 22: was appended, then a traceback
def test_fleet_history_bad_window_is_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]) -> None:
    from tests.fleetsim.sim import simulate
    simulate(3, "gh200_quad", "", tmp_path / "sim", seed=1)
    db = tmp_path / "fleet.duckdb"
    args = ["fleet", str(tmp_path / "sim"), "-o", str(tmp_path / "r"), *option]
    assert main(args) == 2  # without --history
    assert main([*args, "--history", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and not db.exists(), err
