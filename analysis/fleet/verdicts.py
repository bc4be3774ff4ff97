"""``python -m analysis fleet RUNS... -o DIR``: name the degraded nodes of a fleet.

The files are read (load.py) and scored (score.py); this module turns the flags into a
verdict per node and writes the outputs (outputs.py). It only suggests: nodes are never
drained (docs/fleet.md).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..results.io import shown
from . import integrity
from .load import load_fleet
from .outputs import History, add_history, number, write_outputs
from .retest import check_dirs, confirm, retest_column, write_plan
from .score import Options, score
from .table import CAUSE, CONDITION, WORDS

FLAGGED_COLUMNS = ("node", "verdict", "component", "path", "value", "fleet_median",
                   "deviation", "reason")

def load_expected(path: Path) -> list[str]:
    """--expect-nodes: one host name a line ('#' comments)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise InputError(f"{shown(path)}: cannot read the node list ({error.strerror}); "
                         "valid: a text file, one host name a line") from None
    return [s for s in (line.split("#")[0].strip() for line in lines) if s]

_PARTS = re.compile(r"\b(?:pu|mem|dst|a|b)=([a-z]+[0-9]+)\b")

def expected_kinds(table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Each node's kind as it should be, and the processors and memories it lacks.

    A node that lost a NUMA node or a GPU reports a topology of another kind (3 sockets
    instead of 4) and would be compared with nothing. Among nodes of one architecture, a
    kind of the same GPU model (or of none: a node that lost every GPU) whose parts (the
    processors and memories its paths name) are a strict subset of the parts most nodes of
    the main kind have is that kind with parts missing: its rows are compared with that
    kind, and the parts it lacks are returned (node -> names). The main kind is the most
    common; of kinds as common, the one with the most parts (two nodes, one of which lost a
    GPU, are a tie). A kind with parts of its own stays apart. (So a fleet that mixes GPU
    nodes with CPU-only nodes of the same architecture calls the CPU-only ones GPU nodes
    without GPUs: vet such partitions as fleets of their own.)"""
    names = {path: frozenset(_PARTS.findall(path)) for path in table["path"].unique()}
    pairs = table[["node", "node_kind", "path"]].drop_duplicates(["node", "path"])
    parts = {node: frozenset().union(*(names[p] for p in paths))
             for node, paths in pairs.groupby("node")["path"]}
    kinds = pairs.drop_duplicates("node").set_index("node")["node_kind"]
    renamed: dict[str, str] = {}
    lacking: dict[str, list[str]] = {}
    architecture = kinds.str.replace(r"/.*", "", regex=True)
    model = kinds.str.replace(r"^.*?/\d+s/\d+x", "", regex=True)
    for _, members in kinds.groupby(architecture):
        counts = members.value_counts()
        if len(counts) < 2:
            continue
        tied = [str(k) for k in counts.index[counts == counts.iloc[0]]]
        held = {k: frozenset().union(*(parts[n] for n in members.index[members == k])) for k in tied}
        main = max(tied, key=lambda k: (len(held[k]), k))
        main_nodes = members.index[members == main]
        seen = Counter(n for m in main_nodes for n in parts[m])
        common = {n for n, c in seen.items() if 2 * c > len(main_nodes)}
        for node in members.index[members != main]:
            if model[node] in (model[main_nodes[0]], "none") and parts[node] < common:
                renamed[node] = main
                lacking[node] = sorted(common - parts[node], key=_part_order)
    if renamed:
        table = table.assign(node_kind=table["node"].map(renamed).fillna(table["node_kind"]))
    return table, lacking

def _part_order(name: str) -> tuple[bool, str, int]:
    """Memories first (what the admin is told is lost), numa2 before numa12."""
    digits = name.lstrip("abcdefghijklmnopqrstuvwxyz")
    return not name.startswith("numa"), name[:len(name) - len(digits)], int(digits or 0)

def _reason(row: Mapping[str, Any]) -> str:
    """In words, "gpu2 HBM read 3,310 GB/s = fleet median −14 %"; the path is its own column.
    Where the case's file recorded its conditions, what they show follows (issue 40):
    "...: power cap held gpu2's clocks during 92 % of the case", or causes.NOTHING."""
    what, cause = row[WORDS], str(row.get(CAUSE) or "")
    said = f": {cause}" if cause else ""
    if row["flag"] in ("failed", "not run"):
        return f"{what}: {row['status']} (ran on most nodes of the fleet)" + (f"; {cause}" if cause else "")
    change = f"{row['deviation'] * 100:+.0f}".replace("-", "\u2212")
    text = f"{what} {number(row['value'], row['metric'])} = fleet median {change} %"
    return text + (" (below the reference)" if row["flag"] == "below reference" else "") + said


def node_condition(table: pd.DataFrame) -> pd.Series:
    """Per node: the conditions that drain it on their own (CONDITION of its files, "; "
    between files), "" for none; apart from the bandwidth verdicts (docs/fleet.md)."""
    if CONDITION not in table or table.empty:
        return pd.Series(dtype=object)
    found = table.loc[table[CONDITION].astype(str) != "", ["node", CONDITION]].drop_duplicates()
    return found.groupby("node")[CONDITION].agg(lambda texts: "; ".join(dict.fromkeys(texts)))

def verdicts(table: pd.DataFrame, expected: Sequence[str],
             lacking: Mapping[str, Sequence[str]] | None = None,
             retest: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(nodes, flagged): a verdict per node and one row per flagged (node, path); a node
    lacking parts of its kind (expected_kinds) is degraded, one row per part. ``retest``
    (retest.confirm; None: no retest pass): a flagged node it did not confirm is suspect."""
    flagged = table[table["flag"] != ""].copy()
    flagged["reason"] = [_reason(r) for r in flagged.to_dict("records")]
    lost = pd.DataFrame([{"node": node, "component": part, "path": "", "value": np.nan,
                          "fleet_median": np.nan, "deviation": np.nan,
                          "reason": f"{part} missing (the other nodes of its kind have it)"}
                         for node, parts in (lacking or {}).items() for part in parts],
                        columns=["node", "component", "path", "value", "fleet_median",
                                 "deviation", "reason"])
    flagged = pd.concat([flagged, lost], ignore_index=True)
    per_node = table.groupby("node", sort=True).agg(
        node_kind=("node_kind", "first"), cases=("path", "size"),
        ok=("status", lambda s: int((s == "ok").sum())))
    all_failed = per_node["ok"] == 0
    counts = flagged.groupby("node").size()
    per_node["flagged"] = counts.reindex(per_node.index, fill_value=0)
    per_node["verdict"] = np.where(all_failed, "failed",
                                   np.where(per_node["flagged"] > 0, "degraded", "healthy"))
    per_node["retest"] = retest_column(per_node, retest, lacking or {})
    per_node.loc[per_node["retest"] == "not confirmed", "verdict"] = "suspect"
    absent = sorted(set(expected) - set(per_node.index))
    missing = pd.DataFrame({"node_kind": "", "cases": 0, "ok": 0, "flagged": 0,
                            "verdict": "missing"}, index=pd.Index(absent, name="node"))
    nodes = pd.concat([per_node, missing]) if absent else per_node
    nodes.index.name = "node"
    worst = flagged.assign(rank=-flagged["deviation"].abs()).sort_values(["node", "rank"])
    first = worst.groupby("node")[["reason", "path"]].first().reindex(nodes.index)
    nodes["reason"], nodes["path"] = first["reason"].fillna(""), first["path"].fillna("")
    for node, parts in (lacking or {}).items():
        if node in nodes.index and nodes.at[node, "verdict"] == "degraded":
            nodes.loc[node, ["reason", "path"]] = [f"{', '.join(parts)} missing", ""]
    if retest is not None:
        said = retest["text"].reindex(nodes.index).fillna("")
        nodes["reason"] = nodes["reason"].where(said == "", nodes["reason"] + "; " + said)
    nodes["retest"] = nodes["retest"].fillna("")
    nodes["condition"] = node_condition(table).reindex(nodes.index).fillna("")
    nodes.loc[nodes["verdict"] == "failed", "reason"] = "every case failed"
    nodes.loc[nodes["verdict"] == "missing", "reason"] = "no result file"
    flagged["verdict"] = nodes["verdict"].reindex(flagged["node"]).to_numpy()
    extra = nodes[nodes["verdict"].isin(["missing", "failed"])].reset_index()
    extra = extra.assign(component="node", path="", value=np.nan, fleet_median=np.nan,
                         deviation=np.nan)
    flagged = flagged[flagged["verdict"] != "failed"]
    rows = pd.concat([flagged[list(FLAGGED_COLUMNS)], extra[list(FLAGGED_COLUMNS)]],
                     ignore_index=True)
    return nodes.reset_index(), rows

def run_fleet(runs: Sequence[Path], out: Path, options: Options, expected: Sequence[str],
              rejected: list[str], notes: list[str],
              history: History | None = None, retest: Sequence[Path] | None = None,
              ) -> tuple[pd.DataFrame, list[Path]]:
    """The whole command; returns the nodes table and the files written (into DIR,
    created where needed, as `analysis report` does). ``retest``: the retest pass's
    folders (retest.py); DIR/retest.json is written either way."""
    if retest is not None:
        check_dirs(retest)
    broken: list[tuple[Path, str]] = []
    table = load_fleet(runs, rejected, notes, broken=broken)
    found = integrity.problems(table, broken, integrity.load_plans(runs, notes))
    table, lacking = expected_kinds(table)
    table = _score_apart(table, set(found["node"]), options)
    judged = confirm(table, retest, options, notes) if retest is not None else None
    nodes, flagged = verdicts(table, expected, lacking, judged)
    nodes, flagged = integrity.judge(nodes, flagged, found)
    slow, trend_files = None, []
    if history is not None:
        out.mkdir(parents=True, exist_ok=True)
        slow, trend_files = add_history(out, integrity.held_back(table, found["node"]), history)
        worst = slow.drop_duplicates("node").set_index("node")["text"]  # worst first
        nodes = nodes.assign(slow_trend=nodes["node"].map(worst).astype(object).fillna(""))
    files = write_outputs(out, table, nodes, flagged, [*rejected, *notes], slow)
    return nodes, [*files, write_plan(out, table, nodes), *trend_files]

def _score_apart(table: pd.DataFrame, failed: set[str], options: Options) -> pd.DataFrame:
    """Scored without the failed nodes (integrity.py): a broken value must not move the
    fleet median the other nodes are judged by; their rows are kept, unflagged."""
    bad = table["node"].isin(failed)
    if bad.all() or not bad.any():  # every node failed: their flags are replaced anyway
        return score(table, options)
    table = pd.concat([score(table[~bad], options), table[bad]], ignore_index=True)
    table["flag"] = table["flag"].fillna("")
    return table
