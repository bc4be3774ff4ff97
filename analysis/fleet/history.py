"""The fleet history: every night's fleet rows in one embedded DuckDB file (docs/fleet_history.md).

Rows have the schema of the fleet table (analysis.fleet.table, /work/prompts/fleet_schema.md)
with ``night`` a DATE. A night is appended in one transaction: the rows of the (night, node)
pairs it holds replace the ones stored, so appending a night twice never duplicates it, and a
bad frame writes nothing. Synthetic (simulator) rows share the table, flagged, and every
query leaves them out unless asked. A write that fails (a full disk, a quota) rolls back:
one line (HistoryWriteError), the file as it was.

The file also keeps the nightly path's baseline (slurm/nightly.sh): the last good night's
result files themselves, with the night they came from, so that a purge of the scratch
folder the nights live in cannot take the reference away.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import table as fleet_table
from ..errors import InputError
from ..robust import MAD_SCALE
from ..results.io import shown

#: The fleet table's columns (analysis/fleet/table.py), in its order, with their DuckDB types.
_SQL_TYPES = {"night": "DATE", "value": "DOUBLE", "higher_is_better": "BOOLEAN", "synthetic": "BOOLEAN"}
COLUMNS: dict[str, str] = {name: _SQL_TYPES.get(name, "VARCHAR") for name in fleet_table.COLUMNS}
SERIES = ["node", "node_kind", "component", "path", "metric"]  # one trend line
#: The night's fleet table that `analysis fleet -o DIR` writes into DIR for append.
TABLE_FILE = "fleet.parquet"
MIN_NIGHTS = 8  # fewer points make no trend worth naming
Z_LIMIT = 3.5   # |z| below this every night: "within the fleet's spread" (docs/fleet_history.md)


#: A century of nights: more than any history holds, and far from datetime's limits.
MAX_NIGHTS = 36500


class HistoryWriteError(InputError):
    """The database refused a write (no space, a quota, a read-only file): nothing of it was
    stored. An InputError so that every command says it in one line; `fleet-history` exits
    1 for it (the input was fine, the disk was not)."""


def check_window(nights: int, min_drop: float) -> None:
    """The trend window and the loss that counts as degrading, or InputError."""
    if nights < 1:
        raise InputError(f"--nights {nights} is not positive; valid: an integer >= 1")
    if nights > MAX_NIGHTS:  # the window's first night would fall before year 1: a traceback
        raise InputError(f"--nights {nights} is out of range; valid: an integer from 1 to {MAX_NIGHTS}")
    if not 0 < min_drop < 1:
        raise InputError(f"--min-drop {min_drop} is not a fraction; valid: 0 < MIN_DROP < 1, e.g. 0.05")


def check_night(night: str) -> None:
    """--night: a YYYY-MM-DD date, or InputError."""
    try:
        dt.datetime.strptime(night, "%Y-%m-%d")
    except ValueError:
        raise InputError(f"night {night!r} is not a date; valid: YYYY-MM-DD") from None


def _duckdb():
    try:
        import duckdb
    except ImportError:
        raise InputError("the Python package duckdb is not installed; valid: "
                         "pip install -r requirements.txt (duckdb==2.0.1)") from None
    return duckdb


#: DuckDB's memory for its own buffers; a night of 10,752 nodes needs far less, and the
#: default (80 % of the host's memory) is a login node's, not the job's.
MEMORY_LIMIT = "1GB"


def duckdb_config() -> dict[str, Any]:
    """DuckDB's threads as the CPUs this process may run on (a Slurm allocation's, not the
    host's: each thread holds its own buffers) and its memory at MEMORY_LIMIT."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return {"threads": max(1, cpus), "memory_limit": MEMORY_LIMIT}


def connect(db: str | Path, read_only: bool = False):
    """Open (or create) the history file with its table; one line and InputError if it cannot."""
    duckdb = _duckdb()
    if read_only and not Path(db).is_file():
        raise InputError(f"{shown(db)}: no such history database; valid: a file written by "
                         "fleet-history append")
    try:
        con = duckdb.connect(str(db), read_only=read_only, config=duckdb_config())
        _do(con, "SET enable_progress_bar = false")  # stderr carries only error lines
        if not read_only:
            _do(con, "CREATE TABLE IF NOT EXISTS fleet ("
                + ", ".join(f"{c} {t}" for c, t in COLUMNS.items()) + ")")
            _do(con, SPREAD_TABLE)
            _do(con, BASELINE_TABLE)
        _do(con, "SELECT count(*) FROM fleet")
    except duckdb.Error as error:
        raise InputError(f"{shown(db)}: not a usable fleet history database "
                         f"({str(error).splitlines()[0]}); valid: a DuckDB file written by "
                         "fleet-history append, or a new path") from None
    return con


def _do(con, sql: str, params: list | None = None) -> list:
    """Run a statement to its end: DuckDB 2 refuses the next one while a result is unread."""
    return con.execute(sql, params or []).fetchall()


# The fleet's median and MAD per night, node kind, path and metric, kept by append: the
# slow-degradation query then reads these few rows instead of every night's values. Real
# and synthetic rows have separate spreads (never mixed).
SPREAD_TABLE = """CREATE TABLE IF NOT EXISTS fleet_spread (night DATE, node_kind VARCHAR,
  path VARCHAR, metric VARCHAR, synthetic BOOLEAN, med DOUBLE, mad DOUBLE)"""


def refresh_spread(con, nights_sql: str) -> None:
    """Recompute fleet_spread for the nights ``nights_sql`` selects (inside the caller's transaction)."""
    _do(con, f"DELETE FROM fleet_spread WHERE night IN ({nights_sql})")
    _do(con, "INSERT INTO fleet_spread SELECT night, node_kind, path, metric, synthetic, "
             "median(value), mad(value) FROM fleet WHERE status = 'ok' AND isfinite(value) "
             f"AND night IN ({nights_sql}) GROUP BY ALL")


def _checked(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with the table's columns and types, or InputError naming what is wrong."""
    lacking = [c for c in COLUMNS if c not in frame.columns]
    if lacking:
        raise InputError(f"fleet rows lack the column(s) {', '.join(lacking)}; "
                         f"valid: the fleet table columns {', '.join(COLUMNS)}")
    rows = frame[list(COLUMNS)].copy()
    # A night holds millions of rows and a few distinct nights: each is parsed once.
    codes, texts = pd.factorize(rows["night"].astype(str), use_na_sentinel=False)
    nights = pd.to_datetime(pd.Series(texts, dtype=object), format="%Y-%m-%d", errors="coerce")
    if nights.isna().any():
        bad = texts[int(np.flatnonzero(nights.isna().to_numpy())[0])]
        raise InputError(f"night {bad!r} is not a date; valid: YYYY-MM-DD")
    rows["night"] = np.asarray(nights.dt.date, dtype=object)[codes]
    value = pd.to_numeric(rows["value"], errors="coerce")
    if (value.isna() & rows["value"].notna()).any():
        raise InputError("column value holds non-numbers; valid: floats (NaN where a case did not run)")
    rows["value"] = value.astype(float)
    for flag in ("higher_is_better", "synthetic"):
        if not rows[flag].isin([True, False]).all():
            raise InputError(f"column {flag} holds values other than True/False")
        rows[flag] = rows[flag].astype(bool)
    if rows[SERIES].isna().any().any():
        raise InputError(f"columns {', '.join(SERIES)} must not be empty (None/NaN)")
    return rows


def append(db: str | Path, frame: pd.DataFrame) -> int:
    """Store one night's (or several nights') fleet rows; returns the rows written."""
    rows = _checked(frame)
    con = connect(db)
    try:
        con.register("incoming", rows)
        _store(con, db)
    finally:
        _close(con)
    return len(rows)


def _close(con) -> None:
    """Close, even a connection that a failed commit left unusable (its error is the one
    already raised; a second one about the same disk would hide it)."""
    try:
        con.close()
    except _duckdb().Error:
        pass


def append_parquet(db: str | Path, path: Path, night: str | None = None) -> int:
    """Store the fleet table `analysis fleet -o DIR` wrote (DIR/fleet.parquet), checked as
    append() checks a frame, inside DuckDB: its rows never become Python objects, so a
    night of ten thousand nodes is stored in seconds. ``night`` files them under that night."""
    con = connect(db)
    try:
        source = f"read_parquet({_literal(str(path))})"
        try:
            present = {row[0] for row in _do(con, f"DESCRIBE SELECT * FROM {source}")}
        except _duckdb().Error as error:
            raise InputError(f"{shown(path)}: not a readable Parquet file "
                             f"({str(error).splitlines()[0]}); valid: DIR/{TABLE_FILE} "
                             "written by analysis fleet -o DIR") from None
        lacking = [c for c in COLUMNS if c not in present]
        if lacking:
            raise InputError(f"fleet rows lack the column(s) {', '.join(lacking)}; "
                             f"valid: the fleet table columns {', '.join(COLUMNS)}")
        day = _literal(night) if night is not None else "CAST(night AS VARCHAR)"
        bad = _do(con, f"SELECT {day} FROM {source} WHERE TRY_STRPTIME({day}, '%Y-%m-%d') "
                       "IS NULL LIMIT 1")
        if bad:
            raise InputError(f"night {bad[0][0]!r} is not a date; valid: YYYY-MM-DD")
        checks = [("TRY_CAST(value AS DOUBLE) IS NULL AND value IS NOT NULL",
                   "column value holds non-numbers; valid: floats (NaN where a case did not run)"),
                  *((f"TRY_CAST({flag} AS BOOLEAN) IS NULL",
                     f"column {flag} holds values other than True/False")
                    for flag in ("higher_is_better", "synthetic")),
                  (" OR ".join(f"{c} IS NULL" for c in SERIES),
                   f"columns {', '.join(SERIES)} must not be empty (None/NaN)")]
        for where, says in checks:
            if _do(con, f"SELECT 1 FROM {source} WHERE {where} LIMIT 1"):
                raise InputError(f"{shown(path)}: {says}")
        typed = {"night": f"CAST(strptime({day}, '%Y-%m-%d') AS DATE)",
                 "value": "CAST(value AS DOUBLE)", "higher_is_better": "CAST(higher_is_better AS BOOLEAN)",
                 "synthetic": "CAST(synthetic AS BOOLEAN)"}
        select = ", ".join(f"{typed.get(c, f'CAST({c} AS VARCHAR)')} AS {c}" for c in COLUMNS)
        _do(con, f"CREATE TEMP VIEW incoming AS SELECT {select} FROM {source}")
        count = _do(con, "SELECT count(*) FROM incoming")[0][0]
        _store(con, db)
    finally:
        _close(con)
    return int(count)


def failed_nodes(path: Path) -> list[str]:
    """The nodes of a fleet.parquet with a row of status failed: `analysis fleet` stores a
    failed node's rows so (integrity.py), and a failed case fails its node."""
    con = _duckdb().connect()
    try:
        return [row[0] for row in _do(con, "SELECT DISTINCT node FROM read_parquet("
                                            f"{_literal(str(path))}) WHERE status = 'failed' "
                                            "ORDER BY node")]
    finally:
        con.close()


def _literal(text: str) -> str:
    """A SQL string literal (DuckDB's read_parquet takes no parameter for its path)."""
    return "'" + text.replace("'", "''") + "'"


def _store(con, db: str | Path) -> None:
    """The rows of the relation ``incoming`` replace their (night, node) pairs' stored rows
    and the spread of their nights is recomputed, all in one transaction."""
    def statements() -> None:
        _do(con, "DELETE FROM fleet WHERE (night, node) IN "
                 "(SELECT DISTINCT night, node FROM incoming)")
        # Sorted so that DuckDB's per-row-group min/max skip other nodes in a node's query.
        _do(con, f"INSERT INTO fleet SELECT {', '.join(COLUMNS)} FROM incoming "
                 "ORDER BY node, path, night")
        refresh_spread(con, "SELECT DISTINCT night FROM incoming")
    _transaction(con, db, "the night's rows", statements)


def _transaction(con, db: str | Path, what: str, statements) -> None:
    """``statements`` in one transaction, committed; any DuckDB error (a full disk ends the
    commit: DuckDB's write-ahead log cannot grow) rolls it back and is one line."""
    duckdb = _duckdb()
    try:
        _do(con, "BEGIN TRANSACTION")
        try:
            statements()
        except Exception:
            _rollback(con)
            raise
        _do(con, "COMMIT")
    except duckdb.Error as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise HistoryWriteError(f"{shown(db)}: {what} were not stored, the database is as it was "
                                f"({reason}); valid: free space (or quota) where the database "
                                "lives, then run the same command again") from None


def _rollback(con) -> None:
    try:
        _do(con, "ROLLBACK")
    except _duckdb().Error:  # a failed statement may have ended the transaction already
        pass


# The nightly baseline: each file of the last good night (its path below the night's
# folder, its bytes and their SHA-256), per series (a nightly folder), with the night.
BASELINE_TABLE = """CREATE TABLE IF NOT EXISTS nightly_baseline (series VARCHAR,
  night VARCHAR, stored_at TIMESTAMP, name VARCHAR, sha256 VARCHAR, data BLOB)"""


def store_baseline(db: str | Path, series: str, night: str, root: Path) -> int:
    """The result files (*.h5) below ``root`` become the baseline of ``series``, from
    ``night``, replacing the one stored, in one transaction; returns the files stored."""
    if not root.is_dir():
        raise InputError(f"{shown(root)}: no such folder; valid: the folder of the night's "
                         "result files")
    files = sorted(p for p in root.rglob("*.h5") if p.is_file())
    if not files:
        raise InputError(f"{shown(root)}: holds no result file (*.h5); valid: a night with "
                         "results")
    rows = []
    for path in files:
        data = path.read_bytes()
        rows.append([series, night, path.relative_to(root).as_posix(),
                     hashlib.sha256(data).hexdigest(), data])
    con = connect(db)
    try:
        def statements() -> None:
            _do(con, "DELETE FROM nightly_baseline WHERE series = ?", [series])
            con.executemany("INSERT INTO nightly_baseline VALUES (?, ?, now(), ?, ?, ?)", rows)
        _transaction(con, db, f"the baseline files of night {night}", statements)
    finally:
        _close(con)
    return len(rows)


def baseline_night(db: str | Path, series: str) -> str | None:
    """The night of the stored baseline of ``series``; None when there is none."""
    if not Path(db).is_file():
        return None
    con = connect(db, read_only=True)
    try:
        if not _has_baseline_table(con):
            return None
        found = _do(con, "SELECT any_value(night) FROM nightly_baseline WHERE series = ?", [series])
    finally:
        _close(con)
    return found[0][0] if found else None


def _has_baseline_table(con) -> bool:
    return bool(_do(con, "SELECT 1 FROM duckdb_tables() WHERE table_name = 'nightly_baseline'"))


def load_baseline(db: str | Path, series: str, out: Path) -> tuple[str, int]:
    """Write the baseline of ``series`` into the new folder ``out`` (each file at its path
    below the night's folder); returns (its night, the files). No baseline, or a file
    whose bytes no longer match their SHA-256: InputError, one line."""
    none = (f"{shown(db)}: holds no nightly baseline for {series!r}; valid: a database that "
            "fleet-history baseline-store wrote for this series")
    if not Path(db).is_file():
        raise InputError(none)
    con = connect(db, read_only=True)
    try:
        rows = (_do(con, "SELECT night, name, sha256, data FROM nightly_baseline "
                         "WHERE series = ? ORDER BY name", [series])
                if _has_baseline_table(con) else [])
    finally:
        _close(con)
    if not rows:
        raise InputError(none)
    out.mkdir(parents=True, exist_ok=False)
    for night, name, digest, data in rows:
        if hashlib.sha256(data).hexdigest() != digest or name.startswith("/") or ".." in name.split("/"):
            raise InputError(f"{shown(db)}: the baseline file {name!r} of night {night} is "
                             "damaged; valid: store a good night again (baseline-store)")
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    return rows[0][0], len(rows)


def _window(con, nights: int, include_synthetic: bool) -> tuple[str, dict]:
    """WHERE clause and parameters: the ``nights`` nights up to the newest one stored.

    The first night is a literal date, not a subquery, so DuckDB skips older row groups.
    """
    if nights < 1:
        raise InputError(f"nights {nights} is not positive; valid: an integer >= 1")
    last = _do(con, "SELECT max(night) FROM fleet")[0][0]
    if last is None:  # no night to count back from (it was an OverflowError)
        raise InputError("the history database holds no rows; valid: one that `analysis fleet-history append` filled")
    first = last - dt.timedelta(days=nights - 1)
    where = "night >= $first" + ("" if include_synthetic else " AND NOT synthetic")
    return where, {"first": first}


def trend(db: str | Path, node: str | None = None, path: str | None = None, nights: int = 90,
          include_synthetic: bool = False) -> pd.DataFrame:
    """The value of each node x path by night: one row per series, one column per night."""
    con = connect(db, read_only=True)
    try:
        where, params = _window(con, nights, include_synthetic)
        for column, wanted in (("node", node), ("path", path)):
            if wanted is not None:
                where += f" AND {column} = ${column}"
                params[column] = wanted
        long = con.execute(f"SELECT {', '.join(SERIES)}, night, value FROM fleet WHERE {where}",
                           params).df()
    finally:
        con.close()
    if long.empty:
        return pd.DataFrame(columns=SERIES)
    wide = long.pivot(index=SERIES, columns="night", values="value")  # append keeps them unique
    wide.columns = [str(pd.Timestamp(c).date()) for c in wide.columns]
    return wide.reset_index()


def theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Median of the pairwise slopes and the median intercept (robust to outlier nights)."""
    i, j = np.triu_indices(len(x), k=1)
    slope = float(np.median((y[j] - y[i]) / (x[j] - x[i])))
    return slope, float(np.median(y - slope * x))


# Candidates by Tukey's resistant line (medians of the first and last third of the window):
# robust, and plain aggregates in one pass, so the exact O(n^2) Theil-Sen runs only on them.
_CANDIDATES = """
SELECT node, path, metric, any_value(node_kind) AS node_kind, any_value(component) AS component,
       any_value(higher_is_better) AS hib, count(*) AS n,
       median(value) FILTER (WHERE night <= $cut0) AS y0,
       median(value) FILTER (WHERE night >= $cut1) AS y1
FROM fleet WHERE {where} AND status = 'ok' AND isfinite(value)
GROUP BY node, path, metric
HAVING n >= $min_nights AND y0 > 0 AND (CASE WHEN hib THEN y0 - y1 ELSE y1 - y0 END) / y0 > $cut
"""

# The candidates' nights, each with the fleet's median and MAD of its night and path.
_POINTS = """
SELECT node, path, metric, night, value, med, mad
FROM fleet JOIN candidates USING (node, node_kind, path, metric)
JOIN fleet_spread USING (night, node_kind, path, metric, synthetic)
WHERE {where} AND status = 'ok' AND isfinite(value)
"""


def slow_degradation(db: str | Path, nights: int = 90, min_drop: float = 0.05,
                     include_synthetic: bool = False) -> pd.DataFrame:
    """Series whose Theil-Sen trend lost more than ``min_drop`` of its start over the window.

    One row per (node, path, metric): the fitted start and end, the loss (a fraction, a
    higher latency counts as a loss), the nights used, the largest per-night robust |z|
    against the fleet of its node kind, and ``within_spread`` (that |z| stayed below
    Z_LIMIT every night: a per-night outlier test never flagged it). Worst loss first.
    """
    con = connect(db, read_only=True)
    try:
        where, params = _window(con, nights, include_synthetic)
        first, last = _do(con, f"SELECT min(night), max(night) FROM fleet WHERE {where}", params)[0]
        if first is None:
            return _trend_table([])
        third = (last - first) / 3
        candidates = con.execute(_CANDIDATES.format(where=where), {
            **params, "cut0": first + third, "cut1": last - third, "min_nights": MIN_NIGHTS,
            "cut": min_drop / 2}).df()
        if candidates.empty:
            return _trend_table([])
        con.register("candidates", candidates[["node", "node_kind", "path", "metric"]])
        points = con.execute(_POINTS.format(where=where), params).df()
    finally:
        con.close()
    return _trend_table(_fits(candidates, points, min_drop))


def _fits(candidates: pd.DataFrame, points: pd.DataFrame, min_drop: float) -> list[dict]:
    points["z"] = (points["value"] - points["med"]) / (MAD_SCALE * points["mad"])
    points["x"] = (points["night"] - points["night"].min()).dt.days.astype(float)
    rows = []
    keys = ["node", "path", "metric"]
    facts = candidates.set_index(keys)
    for key, series in points.groupby(keys, sort=False):
        series = series.sort_values("x")
        x, y = series["x"].to_numpy(), series["value"].to_numpy()
        slope, intercept = theil_sen(x, y)
        start, end = intercept + slope * x[0], intercept + slope * x[-1]
        fact = facts.loc[key]
        loss = (start - end if fact["hib"] else end - start) / start if start > 0 else np.nan
        if not loss > min_drop:
            continue
        z = np.abs(series["z"].replace([np.inf, -np.inf], np.nan)).max()
        rows.append({**dict(zip(keys, key)), "node_kind": fact["node_kind"],
                     "component": fact["component"], "nights": len(x), "start": start, "end": end,
                     "loss": loss, "slope_per_night": slope / start, "max_abs_z": z,
                     "within_spread": bool(not z >= Z_LIMIT)})
    return rows


def _trend_table(rows: list[dict]) -> pd.DataFrame:
    columns = ["node", "node_kind", "component", "path", "metric", "nights", "start", "end",
               "loss", "slope_per_night", "max_abs_z", "within_spread"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values("loss", ascending=False, ignore_index=True)
