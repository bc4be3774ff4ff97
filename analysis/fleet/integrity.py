"""A node is never healthier than its files (issue 21, docs/fleet.md "Failed nodes").

A node is ``failed``, whatever the fleet's size and whatever its other values say, when
- one of its result files cannot be read (truncated, not HDF5, another schema): the file
  is its node's by the vetting layout (OUTDIR/<host>/x.h5, OUTDIR/<host>/copy/x.h5), else by
  its stem (`analysis simulate` writes nidNNNNNN.h5);
- its plan.json (slurm/vet_node.sh writes it before it measures) names a file that is
  absent, or one holding fewer cases (not skipped) than planned;
- without a plan.json: it lacks a family, a file name or cases of a family that most nodes
  of its kind have (the kind as the node reports it: a node that lost a NUMA node plans
  fewer cases and is compared with its own kind here);
- a case failed (an error; a skip is not one);
- an ok case's value is not finite or not positive, a bandwidth above PEAK_MARGIN x the
  theoretical peak of the parts it crosses, or a latency below LATENCY_FLOOR_NS.
Each problem is one row of PROBLEM_COLUMNS; run_fleet keeps those nodes out of the fleet
median, judge() makes them failed with the problem as the reason.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..model.peaks import PeakModel
from ..results.io import RunFileError, shown
from .load import FILE
from .table import WORDS, load_cases_run

#: The vetting preset's files directly in a node's folder (docs/vetting.md).
PRESET_FILES = frozenset({"bw.h5", "memcpy.h5", "chase.h5", "chase_gpu.h5", "pingpong.h5"})
PLAN = "plan.json"
#: A measured bandwidth above its theoretical peak is impossible; the margin leaves room for
#: the peak tables' rounding (a published 4.0 TB/s HBM that gives 4.1) and a timer's jitter,
#: not for a model figure that is an assumption (those parts are left out of the bound).
PEAK_MARGIN = 1.05
#: A dependent load or a round trip faster than this is not a measurement: 2 cycles of a
#: 4 GHz clock, below any L1 hit.
LATENCY_FLOOR_NS = 0.5
#: Where a value counts both directions of the bytes moved: a copy reads and writes, a
#: bidirectional transfer moves both ways at once.
TWO_WAY = re.compile(r"^bw copy |bidir")
#: A memcpy latency case has no bandwidth (median_GBps is NaN by design).
NO_BANDWIDTH = " mode=latency "
PROBLEM_COLUMNS = ("node", "component", "path", "file", "value", "reason")


def node_folder(path: Path) -> Path:
    return path.parent.parent if path.parent.name == "copy" else path.parent


def file_name(path: Path) -> str:
    """The name plan.json gives the file: ``bw.h5``, ``copy/cpu0.h5``."""
    return f"copy/{path.name}" if path.parent.name == "copy" else path.name


def host_of(path: Path, known: Iterable[str]) -> str:
    """The node a file is of, without reading it: its host folder where that is a node of
    the fleet or the file is one of the preset's, else its stem."""
    known = set(known)
    folder = node_folder(path).name
    if folder in known:
        return folder
    if path.stem in known:
        return path.stem
    return folder if path.parent.name == "copy" or path.name in PRESET_FILES else path.stem


@dataclass
class Plan:
    host: str
    path: str
    files: dict[str, int]


def load_plans(runs: Sequence[Path], files: Iterable[Path], notes: list[str]) -> dict[str, Plan]:
    """host -> its plan.json: in the folder of each node's files, and anywhere under a RUNS
    folder (a node whose every command died before writing has only its plan) but under a
    folder named ``retest`` (the second pass has its own). An unreadable plan is a note
    and the node is held against its kind instead."""
    candidates = {node_folder(Path(f)) / PLAN for f in files}
    for run in runs:
        if run.is_dir():
            candidates.update(p for p in run.rglob(PLAN)
                              if "retest" not in p.relative_to(run).parts[:-1])
    plans: dict[str, Plan] = {}
    for path in sorted(candidates):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text())
            if data.get("schema") != 1:
                raise ValueError(f"schema {data.get('schema')!r}")
            plan = Plan(str(data["host"]), shown(path),
                        {str(k): int(v) for k, v in dict(data["files"]).items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            notes.append(f"{shown(path)}: not a usable plan ({error}); valid: JSON "
                         '{"schema": 1, "host": HOST, "files": {"bw.h5": N, ...}} as '
                         "slurm/vet_node.sh writes it; the node is held against its kind")
            continue
        plans[plan.host] = plan
    return plans


def problems(table: pd.DataFrame, broken: Sequence[tuple[Path, str]],
             plans: Mapping[str, Plan]) -> pd.DataFrame:
    """Every problem of every node (module notes), one row each; a node's broken files
    first, then its files against the plan or its kind, then its cases."""
    names = {f: file_name(Path(f)) for f in table[FILE].cat.categories} if len(table) else {}
    rows: list[dict] = []
    known = set(table["node"].unique()) | set(plans)
    lost: dict[str, set[str]] = {}  # node -> broken file names
    for path, error in broken:
        host, name = host_of(path, known), file_name(path)
        lost.setdefault(host, set()).add(name)
        prefix = shown(path) + ": "
        text = error[len(prefix):] if error.startswith(prefix) else error
        rows.append(_row(host, "file", "", name, np.nan, f"{name}: {text}"))
    rows += _against_plans(table, names, plans, lost)
    rows += _against_kind(table, names, plans, lost)
    rows += _cases(table, names)
    return pd.DataFrame(rows, columns=list(PROBLEM_COLUMNS))


def _row(node: str, part: str, path: str, file: str, value: float, reason: str) -> dict:
    return dict(zip(PROBLEM_COLUMNS, (node, part, path, file, value, reason)))


def _counts(table: pd.DataFrame, names: Mapping[str, str]) -> pd.Series:
    """(node, file name) -> cases that are not skipped."""
    ran = table["status"].to_numpy() != "skipped"
    counts = pd.Series(ran).groupby([table["node"].to_numpy(), table[FILE].to_numpy()],
                                    observed=True).sum()
    counts.index = pd.MultiIndex.from_arrays(
        [counts.index.get_level_values(0), counts.index.get_level_values(1).map(names)])
    return counts.groupby(level=[0, 1]).max()  # one name in two RUNS folders: the fuller


def _against_plans(table: pd.DataFrame, names: Mapping[str, str], plans: Mapping[str, Plan],
                   lost: Mapping[str, set[str]]) -> list[dict]:
    if not plans:
        return []
    counts = _counts(table, names)
    rows = []
    for host, plan in sorted(plans.items()):
        have = counts.loc[host].to_dict() if host in counts.index.get_level_values(0) else {}
        for name, planned in plan.files.items():
            if planned <= 0 or name in lost.get(host, ()):
                continue
            if name not in have:
                rows.append(_row(host, "file", "", name, np.nan,
                                 f"{name} missing: {planned} cases planned"))
            elif have[name] < planned:
                rows.append(_row(host, "file", "", name, np.nan,
                                 f"{name}: {have[name]} of {planned} planned cases"))
    return rows


def _most(sets: pd.Series) -> tuple[set, int]:
    """The members more than half of the nodes' sets hold, and the nodes."""
    seen: dict = {}
    for members in sets:
        for m in members:
            seen[m] = seen.get(m, 0) + 1
    return {m for m, c in seen.items() if 2 * c > len(sets)}, len(sets)


def _against_kind(table: pd.DataFrame, names: Mapping[str, str], plans: Mapping[str, Plan],
                  lost: Mapping[str, set[str]]) -> list[dict]:
    """Nodes without a plan: what most nodes of their kind have and they lack."""
    if table.empty:
        return []
    pairs = table[["node", "node_kind", "family", FILE]].drop_duplicates()
    nodes = pairs.groupby("node").agg(kind=("node_kind", "first"), families=("family", set),
                                      files=(FILE, lambda s: {names[f] for f in s}))
    nodes["files"] = [f | lost.get(n, set()) for n, f in zip(nodes.index, nodes["files"])]
    sizes = table.groupby(["node", "family"]).size()
    rows = []
    for _, members in nodes.groupby("kind"):
        families, _ = _most(members["families"])
        files, _ = _most(members["files"])
        usual = {}
        for family in families:
            counts = sizes.xs(family, level="family").reindex(members.index).dropna()
            mode = counts.mode()
            if len(mode) and 2 * int((counts == mode.iloc[0]).sum()) > len(members):
                usual[family] = int(mode.iloc[0])
        for node, facts in members.iterrows():
            if node in plans:
                continue
            for family in sorted(families - facts["families"]):
                rows.append(_row(node, "file", "", "", np.nan,
                                 f"no {family} cases (most nodes of its kind have them)"))
            for name in sorted(files - facts["files"]):
                rows.append(_row(node, "file", "", name, np.nan,
                                 f"{name} missing (most nodes of its kind have it)"))
            for family, wanted in sorted(usual.items()):
                have = int(sizes.get((node, family), 0))
                if 0 < have < wanted:
                    rows.append(_row(node, "file", "", "", np.nan,
                                     f"{family}: {have} of the {wanted} cases most nodes of its "
                                     "kind have"))
    return rows


def _cases(table: pd.DataFrame, names: Mapping[str, str]) -> list[dict]:
    """Failed cases and impossible values, each with its file, case and value."""
    status = table["status"].to_numpy()
    value = table["value"].to_numpy(dtype=float)
    ok = status == "ok"
    bandwidth = table["higher_is_better"].to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        not_positive = ok & ~(np.isfinite(value) & (value > 0))
        slow = ok & ~bandwidth & (value < LATENCY_FLOOR_NS)
    if not_positive.any():  # a memcpy latency case has no bandwidth by design
        not_positive &= ~table["path"].str.contains(NO_BANDWIDTH, regex=False).to_numpy()
    bound = _bounds(table, ok & bandwidth & ~not_positive)
    with np.errstate(invalid="ignore"):
        above = value > bound
    rows = []
    picked = status == "failed"
    of_file: dict = {}
    if picked.any():  # "3 of 112 cases of the file failed": one case or the whole file
        keys = [table["node"].to_numpy(), table[FILE].to_numpy()]
        every = pd.Series(picked).groupby(keys, observed=True).agg(["sum", "size"])
        of_file = {k: f" ({int(r['sum'])} of {int(r['size'])} cases of the file failed)"
                   for k, r in every[every["sum"] > 1].iterrows()}
    for mask, text in ((picked, lambda r: "failed" + of_file.get((r["node"], r[FILE]), "")),
                       (not_positive, lambda r: f"= {r['value']:g} (not a finite positive value)"),
                       (above, lambda r: f"{r['value']:,.0f} GB/s is above {PEAK_MARGIN:g}x its "
                                         f"theoretical peak ({r['bound'] / PEAK_MARGIN:,.0f} GB/s)"),
                       (slow, lambda r: f"{r['value']:g} ns is below {LATENCY_FLOOR_NS:g} ns, "
                                        "faster than any memory access")):
        if not mask.any():
            continue
        part = table[mask].assign(bound=bound[mask])
        for r in part.to_dict("records"):
            name = names[r[FILE]]
            rows.append(_row(r["node"], r["component"], r["path"], name, r["value"],
                             f"{name}: {r[WORDS]} {text(r)}"))
    return rows


def _bounds(table: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """PEAK_MARGIN x the theoretical peak of each selected row's parts (NaN elsewhere or
    where no part has a published figure), computed once per (node kind, component)."""
    bound = np.full(len(table), np.nan)
    if not rows.any():
        return bound
    part = table.loc[rows, ["node_kind", "component", "path", FILE]]
    models: dict[str, Callable[[str], float]] = {}
    for kind, first in part.drop_duplicates("node_kind").set_index("node_kind")[FILE].items():
        try:
            models[kind] = _peak_of(PeakModel(load_cases_run(Path(first)).topology))
        except RunFileError:
            models[kind] = lambda _: np.nan
    keys = part[["node_kind", "component"]].drop_duplicates()
    peaks = pd.Series([models[k](c) for k, c in keys.itertuples(index=False)],
                      index=pd.MultiIndex.from_frame(keys), dtype=float)
    peak = peaks.reindex(pd.MultiIndex.from_frame(part[["node_kind", "component"]])).to_numpy()
    two_way = part["path"].str.contains(TWO_WAY).to_numpy()
    bound[rows] = PEAK_MARGIN * peak * np.where(two_way, 2.0, 1.0)
    return bound


def _peak_of(model: PeakModel) -> Callable[[str], float]:
    """component -> the lowest published capacity among its parts (table.component's
    names). Fewer parts than the path crosses can only raise the bound, never flag a value
    that is possible. The socket interconnect is left out: its published figures disagree
    (75 and 100 GB/s per direction for a quad GH200)."""
    def capacity(hop: str) -> float:
        if hop.startswith("link:"):
            _, kind, ends = hop.split(":", 2)
            if kind == "interconnect":
                return np.nan
            gpu = re.match(r"gpu(\d+)", ends)
            found = model.link(kind, int(gpu.group(1)) if gpu else None)
        elif re.fullmatch(r"gpu\d+", hop):
            found = model.memory(hop)
        elif re.fullmatch(r"cpu\d+", hop):
            numa = model.processors.get(hop, {}).get("numa")
            if numa is None:
                return np.nan
            found = model.memory(f"numa{numa}")
        else:
            return np.nan
        return np.nan if found.gbps is None or found.assumed else float(found.gbps)

    def peak(component: str) -> float:
        known = [c for c in map(capacity, component.split("+")) if np.isfinite(c)]
        return min(known) if known else np.nan
    return peak


def judge(nodes: pd.DataFrame, flagged: pd.DataFrame,
          found: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """nodes.csv and flagged.json with every node that has a problem ``failed``: its first
    problem the reason (with how many more), its flags replaced by its problems."""
    if found.empty:
        return nodes, flagged
    first = found.groupby("node", sort=False).agg(reason=("reason", "first"),
                                                  path=("path", "first"),
                                                  count=("reason", "size"))
    more = first["count"] - 1
    first["reason"] += [f"; {m} more in flagged.json" if m else "" for m in more]
    nodes = nodes.set_index("node")
    new = first.index.difference(nodes.index)
    if len(new):
        blank = pd.DataFrame({"node_kind": "", "cases": 0, "ok": 0, "flagged": 0},
                             index=pd.Index(new, name="node"))
        nodes = pd.concat([nodes, blank])
    nodes.loc[first.index, "verdict"] = "failed"
    nodes.loc[first.index, "reason"] = first["reason"]
    nodes.loc[first.index, "path"] = first["path"]
    nodes.loc[first.index, "flagged"] = first["count"]
    nodes.index.name = "node"
    rows = found.assign(verdict="failed", fleet_median=np.nan, deviation=np.nan)
    kept = flagged[~flagged["node"].isin(first.index)]
    flagged = pd.concat([kept, rows[[c for c in flagged.columns if c in rows.columns]]],
                        ignore_index=True)
    return nodes.reset_index(), flagged


def held_back(table: pd.DataFrame, failed: Iterable[str]) -> pd.DataFrame:
    """The rows of failed nodes with status ``failed`` and no value: stored (the history
    then knows the node was there that night) but never taken for a measurement."""
    bad = table["node"].isin(set(failed)).to_numpy()
    if not bad.any():
        return table
    table = table.copy()
    table.loc[bad, "status"] = "failed"
    table.loc[bad, "value"] = np.nan
    return table
