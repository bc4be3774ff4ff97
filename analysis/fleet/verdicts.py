"""``python -m analysis fleet RUNS... -o DIR``: name the degraded nodes of a fleet.

Per (node kind, path, metric) the fleet median and MAD across nodes; a node's value is an
outlier when its robust z = (value - median) / (1.4826 MAD) is beyond -k in the bad
direction AND its deficit exceeds a minimum relative change (a MAD of a very uniform
fleet would otherwise flag harmless 1 % differences), or when it is below a reference
floor. A case that failed or was skipped where most of the fleet ran it is flagged too.
It only suggests: nodes are never drained (docs/fleet.md).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..render import tables
from ..errors import InputError
from . import history as fleet_history
from .history_cli import write_trends
from .robust import MAD_SCALE
from .table import COLUMNS, WORDS, fleet_columns, load_cases_run
from ..results.io import RunFileError, shown

HEATMAP_NODES = 60   # rows of the heatmap: the worst degraded nodes, then healthy ones
FLAGGED_COLUMNS = ("node", "verdict", "component", "path", "value", "fleet_median",
                   "deviation", "reason")


@dataclass
class Options:
    k: float = 4.0
    min_change: float = 0.05
    floors: Mapping[str, Mapping[str, float]] | None = None  # node_kind -> path -> floor

    def __post_init__(self) -> None:
        if not (self.k > 0 and 0 <= self.min_change < 1):
            raise InputError(f"-k {self.k:g} --min-change {self.min_change:g}: valid: k > 0 "
                             "and 0 <= min-change < 1 (a fraction, 0.05 = 5 %)")


def result_files(paths: Sequence[Path]) -> list[Path]:
    """RUNS: files as given, folders expanded to their .h5 files (recursively)."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*.h5")) if path.is_dir() else [path])
    return files


def load_fleet(paths: Sequence[Path], rejected: list[str], notes: list[str]) -> pd.DataFrame:
    """The fleet table of every usable file; a bad file is one line in ``rejected``.

    The files of one host are merged (a node's checks may write one file each); where two
    hold the same case, the run with the newest start_time is kept and each older file is
    one line in ``notes``."""
    parts, stamps, names = [], [], []
    for path in result_files(paths):
        try:
            run = load_cases_run(path)
        except RunFileError as error:
            rejected.append(str(error))
            continue
        parts.append(fleet_columns(run))
        stamps.append(str(run.attrs.get("start_time", "")))
        names.append(shown(path))
    if not parts:
        raise InputError("no usable mempath result file among RUNS; valid: .h5 files or "
                         "folders of them (docs/schema.md)")
    table = pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in (*COLUMNS, WORDS)})
    origin = np.repeat(np.arange(len(parts)), [len(p["value"]) for p in parts])
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


def load_floors(path: Path) -> dict[str, dict[str, float]]:
    """--reference: JSON {node_kind: {path: floor}} (a value below its floor is flagged)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{shown(path)}: cannot read the reference ({error}); valid: JSON "
                         '{"NODE_KIND": {"PATH": FLOOR, ...}}') from None
    if not isinstance(data, dict) or not all(
            isinstance(v, dict) and all(isinstance(f, (int, float)) for f in v.values())
            for v in data.values()):
        raise InputError(f"{shown(path)}: the reference must be JSON "
                         '{"NODE_KIND": {"PATH": FLOOR, ...}} with numeric floors')
    return {kind: {p: float(f) for p, f in paths.items()} for kind, paths in data.items()}


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
    instead of 4) and would be compared with nothing. Among nodes of one architecture and
    GPU model, a kind whose parts (the processors and memories its paths name) are a
    strict subset of the parts most nodes of the most common kind have is that kind with
    parts missing: its rows are compared with that kind, and the parts it lacks are
    returned (node -> names). A kind with parts of its own stays apart."""
    names = {path: frozenset(_PARTS.findall(path)) for path in table["path"].unique()}
    pairs = table[["node", "node_kind", "path"]].drop_duplicates(["node", "path"])
    parts = {node: frozenset().union(*(names[p] for p in paths))
             for node, paths in pairs.groupby("node")["path"]}
    kinds = pairs.drop_duplicates("node").set_index("node")["node_kind"]
    renamed: dict[str, str] = {}
    lacking: dict[str, list[str]] = {}
    family = kinds.str.replace(r"/\d+s/\d+x", "/", regex=True)  # architecture and GPU model
    for _, members in kinds.groupby(family):
        counts = members.value_counts()
        if len(counts) < 2:
            continue
        main = str(counts.index[0])
        main_nodes = members.index[members == main]
        seen = Counter(n for m in main_nodes for n in parts[m])
        common = {n for n, c in seen.items() if 2 * c > len(main_nodes)}
        for node in members.index[members != main]:
            if parts[node] < common:
                renamed[node] = main
                lacking[node] = sorted(common - parts[node], key=_part_order)
    if renamed:
        table = table.assign(node_kind=table["node"].map(renamed).fillna(table["node_kind"]))
    return table, lacking


def _part_order(name: str) -> tuple[bool, str, int]:
    """Memories first (what the admin is told is lost), numa2 before numa12."""
    digits = name.lstrip("abcdefghijklmnopqrstuvwxyz")
    return not name.startswith("numa"), name[:len(name) - len(digits)], int(digits or 0)


def score(table: pd.DataFrame, options: Options) -> pd.DataFrame:
    """Add fleet_median, mad, z, deviation and flag to every row (vectorised per group)."""
    keys = ["node_kind", "path", "metric"]
    groups = table.groupby(keys, sort=False)["value"]
    table = table.assign(fleet_median=groups.transform("median"))
    spread = (table["value"] - table["fleet_median"]).abs()
    table["mad"] = spread.groupby([table[k] for k in keys], sort=False).transform("median")
    sign = np.where(table["higher_is_better"].to_numpy(dtype=bool), 1.0, -1.0)
    scale = MAD_SCALE * table["mad"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        table["z"] = sign * (table["value"] - table["fleet_median"]).to_numpy() / scale
        table["deviation"] = (table["value"] / table["fleet_median"] - 1.0).to_numpy()
    worse = sign * table["deviation"].to_numpy() < -options.min_change
    table["flag"] = np.where(worse & (table["z"].to_numpy() < -options.k), "outlier", "")
    _floor_flags(table, options)
    _lost_flags(table)
    return table


def _floor_flags(table: pd.DataFrame, options: Options) -> None:
    if not options.floors:
        return
    floors = pd.Series({(k, p): f for k, paths in options.floors.items() for p, f in paths.items()})
    floor = pd.MultiIndex.from_frame(table[["node_kind", "path"]]).map(floors.to_dict())
    floor = np.asarray(floor, dtype=float)
    higher = table["higher_is_better"].to_numpy(dtype=bool)
    below = np.where(higher, table["value"] < floor, table["value"] > floor)
    table.loc[below & (table["flag"] == ""), "flag"] = "below reference"


def _lost_flags(table: pd.DataFrame) -> None:
    """A case that did not run where most of the fleet ran it."""
    ran = (table["status"] == "ok").groupby([table["node_kind"], table["path"]]).transform("mean")
    lost = (table["status"] != "ok") & (ran > 0.5)
    table.loc[lost, "flag"] = np.where(table.loc[lost, "status"] == "failed", "failed", "not run")


def _number(value: float, metric: str) -> str:
    unit = "GB/s" if metric.endswith("GBps") else "ns"
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.1f} {unit}"


def _reason(row: Mapping[str, Any]) -> str:
    """In words, "gpu2 HBM read 3,310 GB/s = fleet median −14 %"; the path is its own column."""
    what = row[WORDS]
    if row["flag"] in ("failed", "not run"):
        return f"{what}: {row['status']} (ran on most nodes of the fleet)"
    change = f"{row['deviation'] * 100:+.0f}".replace("-", "\u2212")
    text = f"{what} {_number(row['value'], row['metric'])} = fleet median {change} %"
    return text + (" (below the reference)" if row["flag"] == "below reference" else "")


def verdicts(table: pd.DataFrame, expected: Sequence[str],
             lacking: Mapping[str, Sequence[str]] | None = None,
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(nodes, flagged): a verdict per node and one row per flagged (node, path); a node
    lacking parts of its kind (expected_kinds) is degraded, one row per part."""
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


def write_outputs(out: Path, table: pd.DataFrame, nodes: pd.DataFrame, flagged: pd.DataFrame,
                  rejected: Sequence[str], slow: pd.DataFrame | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    nodes.to_csv(out / "nodes.csv", index=False)
    records = json.loads(flagged.to_json(orient="records"))
    (out / "flagged.json").write_text(json.dumps(records, indent=1, ensure_ascii=False))
    (out / "summary.md").write_text(_summary(table, nodes, rejected, slow))
    return [out / "nodes.csv", out / "flagged.json", out / "summary.md", *_heatmap(out, table, nodes)]


@dataclass
class History:
    """--history DB: the night is appended and the trends of the window join the report."""
    db: Path
    nights: int = 90
    min_drop: float = 0.05

    def __post_init__(self) -> None:  # before the night is appended
        fleet_history.check_window(self.nights, self.min_drop)


def add_history(out: Path, table: pd.DataFrame,
                history: History) -> tuple[pd.DataFrame, list[Path]]:
    """Append the night to the history database and write its trend files into ``out``;
    returns the slowly degrading series, worst first, each with its ``text`` in words.

    The rows appended carry the node kind as it should be (expected_kinds), so that a node
    that lost a part keeps its series. The trends are of the kind of data analysed: a
    simulated night's come from the synthetic rows, a real night's from the real ones."""
    fleet_history.append(history.db, table[list(COLUMNS)])
    synthetic = bool(table["synthetic"].all())
    _, slow = write_trends(history.db, out, history.nights, history.min_drop, synthetic)
    what = table.drop_duplicates("path").set_index("path")[WORDS]
    slow = slow.assign(what=slow["path"].map(what).fillna(slow["component"]))
    slow["text"] = [f"{r['what']} {_number(r['start'], r['metric'])} to "
                    f"{_number(r['end'], r['metric'])} ({-r['loss'] * 100:+.0f} % over "
                    f"{r['nights']} nights)".replace("-", "\u2212")
                    for r in slow.to_dict("records")]
    files = [out / name for name in ("trend.csv", "slow_degradation.csv",
                                     "slow_degradation.json", "worst_trends.png", "worst_trends.pdf")]
    return slow, files


def _summary(table: pd.DataFrame, nodes: pd.DataFrame, rejected: Sequence[str],
             slow: pd.DataFrame | None = None) -> str:
    counts = nodes["verdict"].value_counts()
    lines = ["# Fleet report", "",
             "It only suggests: no node is drained. Verdicts: healthy, degraded (a component "
             "flagged), failed (every case failed), missing (expected, no file).", ""]
    lines += tables.markdown(["node kind", "nodes", "paths"],
                             [[kind, part["node"].nunique(), part["path"].nunique()]
                              for kind, part in table.groupby("node_kind")])
    lines += tables.markdown(["verdict", "nodes"],
                             [[v, int(counts.get(v, 0))] for v in ("healthy", "degraded", "failed", "missing")])
    if bool(table["synthetic"].any()):
        lines += ["**Synthetic data** (simulator output) is among the inputs.", ""]
    bad = nodes[nodes["verdict"] != "healthy"]
    if len(bad):
        lines += tables.markdown(bad[["node", "verdict", "reason"]])
    if slow is not None:
        lines += ["## Slowly degrading (history database)", ""]
        if slow.empty:
            lines += ["No series lost more than the minimum drop over the window.", ""]
        else:
            lines += tables.markdown(["node", "component", "trend"],
                                     [[r.node, r.component, r.text] for r in slow.itertuples()])
    if rejected:
        lines += ["Inputs left out:", ""] + [f"- {line}" for line in rejected]
    return "\n".join(lines).rstrip("\n") + "\n"


def heatmap_rows(table: pd.DataFrame, nodes: pd.DataFrame) -> tuple[list[str], int]:
    """(rows, degraded nodes left out): the worst HEATMAP_NODES degraded nodes (largest
    flagged deviation first; a failed or missing case counts as -100 %), then healthy ones
    sampled evenly up to HEATMAP_NODES; thousands of rows would not be readable."""
    flagged = table[table["flag"] != ""]
    worst = flagged["deviation"].abs().fillna(1.0).groupby(flagged["node"]).max()
    bad = nodes.loc[nodes["verdict"] == "degraded", "node"]
    bad = worst.reindex(bad).fillna(1.0).sort_values(ascending=False, kind="stable").index.tolist()
    healthy = nodes.loc[nodes["verdict"] == "healthy", "node"].tolist()
    room = max(0, HEATMAP_NODES - len(bad))
    step = max(1, len(healthy) // max(1, room))
    return bad[:HEATMAP_NODES] + healthy[::step][:room], max(0, len(bad) - HEATMAP_NODES)


HEATMAP_ROW_IN = 0.13  # a row of the heatmap: room for its 7 pt node name


def _heatmap(out: Path, table: pd.DataFrame, nodes: pd.DataFrame) -> list[Path]:
    """Deviation from the fleet median, nodes x paths, heatmap_rows() only, at page width
    in the report style (render.style); the figure's height follows its rows so that each
    row keeps a 7 pt label. Returns heatmap.png and heatmap.pdf."""
    from ..render import style
    shown_nodes, hidden = heatmap_rows(table, nodes)
    part = table[table["node"].isin(shown_nodes)]
    sign = np.where(part["higher_is_better"].to_numpy(dtype=bool), 1.0, -1.0)
    grid = part.assign(d=sign * part["deviation"] * 100).pivot_table(
        index="node", columns="path", values="d", aggfunc="first").reindex(shown_nodes)
    fig, (ax,) = style.panels(1, style.PAGE_IN, panel_height=HEATMAP_ROW_IN * len(grid) + 1.0)
    image = ax.imshow(grid.to_numpy(dtype=float), aspect="auto", cmap="RdBu", vmin=-20, vmax=20,
                      interpolation="nearest")
    ax.set_yticks(range(len(grid)), grid.index)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    label = f"{grid.shape[1]} paths (fleet_table.py path names)"
    if hidden:
        label += f"\n{hidden} more degraded nodes not shown (nodes.csv lists every node)"
    ax.set_xlabel(label)
    ax.set_title("Deviation from the fleet median, % (negative = worse; colour saturates at ±20 %)")
    fig.colorbar(image, ax=ax, label="deviation, %", fraction=0.04, aspect=30, pad=0.02)
    return style.save(fig, out, "heatmap")


def run_fleet(runs: Sequence[Path], out: Path, options: Options, expected: Sequence[str],
              rejected: list[str], notes: list[str],
              history: History | None = None) -> tuple[pd.DataFrame, list[Path]]:
    """The whole command; returns the nodes table and the files written (into DIR,
    created where needed, as `analysis report` does)."""
    table, lacking = expected_kinds(load_fleet(runs, rejected, notes))
    table = score(table, options)
    nodes, flagged = verdicts(table, expected, lacking)
    slow, trend_files = None, []
    if history is not None:
        out.mkdir(parents=True, exist_ok=True)
        slow, trend_files = add_history(out, table, history)
        worst = slow.drop_duplicates("node").set_index("node")["text"]  # worst first
        nodes = nodes.assign(slow_trend=nodes["node"].map(worst).fillna(""))
    files = write_outputs(out, table, nodes, flagged, [*rejected, *notes], slow)
    return nodes, files + trend_files
