"""Confirm before condemning: a flagged case is measured again on its node
before the node is called degraded.

The first pass writes DIR/retest.json: per flagged node, each flagged case, the preset
file it came from and the mempath options that select exactly that case (slurm/vet_node.sh
with VET_RETEST re-runs them into OUTDIR/retest/<host>/). With --retest, each re-measured
value is judged against the FIRST pass's fleet median and MAD of its (node kind, path,
metric) by score.py's own rule: flagged again = confirmed. One value from the node's own
noisy second look is not compared with a fleet that has none (docs/fleet.md).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .. import outfiles
from ..errors import InputError
from ..results.io import shown
from .case_paths import filter_args, preset_file
from .load import load_fleet
from .outputs import number
from .score import Options, judge, ran_fraction
from .table import WORDS

RETEST_JSON = "retest.json"
SCHEMA = 1
#: nodes.csv `retest` of a flagged node; empty for a node never flagged.
CONFIRMED, NOT_CONFIRMED, NOT_RETESTED, NO_PASS = (
    "confirmed", "not confirmed", "not retested", "no retest pass")


def plan(table: pd.DataFrame, nodes: pd.DataFrame) -> dict:
    """retest.json: each flagged case of every degraded or suspect node (a failed or
    missing node is not re-measured: its files are the problem)."""
    judged = nodes.loc[nodes["verdict"].isin(["degraded", "suspect"]), "node"]
    rows = table.loc[(table["flag"] != "") & table["node"].isin(judged), ["node", "family", "path"]]
    rows = rows.assign(file=[preset_file(p) for p in rows["path"]])
    listed: dict[str, list[dict]] = {}
    for row in rows.sort_values(["node", "file", "path"]).itertuples():
        listed.setdefault(row.node, []).append({"file": row.file, "family": row.family,
                                                "path": row.path, "args": filter_args(row.path)})
    night = str(table["night"].max()) if len(table) else ""
    return {"schema": SCHEMA, "night": night, "nodes": listed}


def write_plan(out: Path, table: pd.DataFrame, nodes: pd.DataFrame) -> Path:
    """DIR/retest.json, one case a line (an operator greps a node's cases)."""
    data = plan(table, nodes)
    hosts = [f" {json.dumps(host)}: [\n" + ",\n".join(f"  {json.dumps(e)}" for e in entries)
             + "\n ]" for host, entries in data["nodes"].items()]
    nodes_text = "{\n" + ",\n".join(hosts) + "\n}" if hosts else "{}"
    out.mkdir(parents=True, exist_ok=True)
    outfiles.write_text(out / RETEST_JSON, f'{{"schema": {SCHEMA}, "night": {json.dumps(data["night"])}, '
                                           f'"nodes": {nodes_text}}}\n')
    return out / RETEST_JSON


def check_dirs(dirs: Sequence[Path]) -> None:
    for folder in dirs:
        if not folder.is_dir():
            raise InputError(f"--retest {shown(folder)}: no such folder; valid: the retest "
                             "pass's folder (OUTDIR/retest, written by vet_node.sh with "
                             "VET_RETEST)")


def confirm(table: pd.DataFrame, dirs: Sequence[Path], options: Options,
            notes: list[str]) -> pd.DataFrame:
    """Per flagged node: ``retest`` (confirmed, not confirmed, not retested) and ``text``,
    the retest value in words. A node is confirmed when any of its cases is flagged
    again; not confirmed only when every flagged case was re-measured and none was (a case
    not re-measured is unknown, and the node keeps its first verdict)."""
    flagged = table[table["flag"] != ""].assign(ran=ran_fraction(table)[table["flag"] != ""])
    problems: list[str] = []
    try:
        again = load_fleet(dirs, problems, [], every_run=True)
    except InputError as error:
        problems.append(str(error))
        again = pd.DataFrame(columns=["node", "path", "metric", "value", "status"])
    notes += [f"retest pass: {line}" for line in problems]
    keys = ["node", "path", "metric"]
    again = rounds_median(again, keys)
    rows = flagged.drop(columns=["z", "deviation", "flag"]).merge(
        again[[*keys, "value", "status"]], on=keys, how="left", suffixes=("_first", ""),
        indicator=True)
    rows["retested"] = rows.pop("_merge") == "both"
    rows["value"] = rows["value"].astype(float)
    rows["status"] = rows["status"].fillna("")
    redone = judge(rows.copy(), options, rows["ran"])
    rows["confirmed"] = rows["retested"] & (redone["flag"] != "")
    rows["deviation"] = redone["deviation"]
    per_node = rows.groupby("node").agg(all_retested=("retested", "all"),
                                        confirmed=("confirmed", "any"))
    per_node["retest"] = np.where(per_node["confirmed"], CONFIRMED,
                                  np.where(per_node["all_retested"], NOT_CONFIRMED, NOT_RETESTED))
    shown_rows = rows[rows["retested"]].assign(
        rank=lambda r: -r["confirmed"].astype(int) * 10.0 - r["deviation"].abs().fillna(1.0))
    worst = shown_rows.sort_values(["node", "rank"]).groupby("node").first()
    per_node["text"] = pd.Series({node: _text(row) for node, row in worst.iterrows()}
                                 ).reindex(per_node.index).fillna("")
    return per_node[["retest", "text"]]


def rounds_median(again: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One row per case of the retest pass: the median of its rounds' ok values (status
    ok), or, where no round of it was ok, the first round's status and no value. Rounds
    (vet_node.sh's VET_RETEST_ROUNDS) make the confirmation as sure as the first pass
    is noisy: a healthy case passes the threshold by chance in one round, seldom in the
    median of three."""
    if again.empty:
        return again[[*keys, "value", "status"]]
    ok = again[again["status"] == "ok"]
    medians = ok.groupby(list(keys), sort=False, observed=True)["value"].median()
    first = again.drop_duplicates(list(keys)).set_index(list(keys))["status"]
    out = first.to_frame().join(medians)
    out.loc[out["value"].notna(), "status"] = "ok"
    return out.reset_index()[[*keys, "value", "status"]]


def _text(row: Mapping) -> str:
    if row["status"] != "ok":
        return f"retest: {row[WORDS]} {row['status']}"
    change = f"{row['deviation'] * 100:+.0f}".replace("-", "\u2212")
    return f"retest: {row[WORDS]} {number(row['value'], row['metric'])} = fleet median {change} %"


def retest_column(per_node: pd.DataFrame, judged: pd.DataFrame | None,
                  lacking: Mapping[str, Sequence[str]]) -> pd.Series:
    """nodes.csv `retest` of every node judged so far (verdict degraded = flagged): the
    confirmation, ``no retest pass`` without --retest, empty where never flagged. A node
    lacking a part of its kind has nothing to re-measure and stays degraded."""
    flagged = per_node["verdict"] == "degraded"
    if judged is None:
        return pd.Series(np.where(flagged, NO_PASS, ""), index=per_node.index)
    status = judged["retest"].reindex(per_node.index).fillna(NOT_RETESTED)
    status[status.index.isin(list(lacking)) & (status == NOT_CONFIRMED)] = NOT_RETESTED
    return status.where(flagged, "")
