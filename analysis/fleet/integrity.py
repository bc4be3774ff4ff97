"""A node is never healthier than its files (docs/fleet.md "Failed nodes").

A node is ``failed``, whatever the fleet's size and whatever its other values say, when
- one of its result files cannot be read (truncated, not HDF5, another schema): the file
  is its node's by the vetting layout (OUTDIR/<host>/x.h5, OUTDIR/<host>/copy/x.h5), else by
  its stem (the simulator, tests/fleetsim, writes nidNNNNNN.h5);
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
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..model.peaks import PeakModel
from ..results.io import RunFileError, shown
from .load import FILE, first_pass
from .table import ABORTED, WORDS, load_cases_run

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
#: A memcpy latency case measures a time: its median_GBps may be NaN while it is ok.
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


def load_plans(runs: Sequence[Path], notes: list[str]) -> dict[str, Plan]:
    """host -> its plan.json: anywhere under a RUNS folder (a node whose every command died
    before writing has only its plan) but under a folder named ``retest`` (the second pass
    has its own), and in the node folder of a RUNS file. An unreadable plan is a note and
    the node is held against its kind."""
    candidates: set[Path] = set()
    for run in runs:
        if run.is_dir():
            candidates.update(first_pass(run, PLAN))
        else:
            candidates.add(node_folder(run) / PLAN)
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
    if len(table):
        keys = _Keys.of(table, names)
        rows += _aborted(_against_plans(table, keys, plans, lost) + _against_kind(keys, plans, lost),
                         table, names)
        rows += _cases(table, keys, names)
    return pd.DataFrame(rows, columns=list(PROBLEM_COLUMNS))


def _aborted(rows: list[dict], table: pd.DataFrame, names: Mapping[str, str]) -> list[dict]:
    """The rows of cases or files a node lacks, each followed by its files' own `aborted`
    text where a run was ended by its --timeout ("bw.h5 aborted: case 64 (bw read cpu3 numa2)
    ran longer than --timeout 300 s"): the file names the case that hung."""
    if ABORTED not in table or not (table[ABORTED].astype(str) != "").any():
        return rows
    said = table.loc[table[ABORTED].astype(str) != "", ["node", FILE, ABORTED]].drop_duplicates(["node", FILE])
    by_node: dict[str, list[tuple[str, str]]] = {}
    for node, file, text in said.itertuples(index=False):
        by_node.setdefault(str(node), []).append((names.get(file, str(file)), str(text)))
    for row in rows:
        aborted = by_node.get(row["node"], [])
        mine = [a for a in aborted if a[0] == row["file"]] or aborted
        if mine:
            row["reason"] += "; " + "; ".join(f"{name} aborted: {text}" for name, text in mine)
    return rows


@dataclass
class _Keys:
    """The table's text columns as integer codes, each factorised once: on 2,688 nodes x
    245 cases one factorisation of a text column costs a fifth of a second."""
    node: np.ndarray      # per row, code into nodes
    nodes: np.ndarray
    family: np.ndarray    # per row, code into families
    families: np.ndarray
    file: np.ndarray      # per row, code into files (FILE's categories)
    files: list[str]      # file names as plan.json gives them
    kinds: np.ndarray     # per node code, its node kind

    @classmethod
    def of(cls, table: pd.DataFrame, names: Mapping[str, str]) -> "_Keys":
        node, nodes = pd.factorize(table["node"])
        family, families = pd.factorize(table["family"])
        first = np.unique(node, return_index=True)[1]
        return cls(node, np.asarray(nodes), family, np.asarray(families),
                   table[FILE].cat.codes.to_numpy(),
                   [names[f] for f in table[FILE].cat.categories],
                   table["node_kind"].to_numpy()[first])

    def pairs(self, a: np.ndarray, b: np.ndarray, size: int,
              rows: np.ndarray | None = None) -> dict[tuple[int, int], int]:
        """(a code, b code) -> rows (of ``rows``, a mask) holding the pair."""
        key = a.astype(np.int64) * size + b
        found, counts = np.unique(key if rows is None else key[rows], return_counts=True)
        return {(int(k) // size, int(k) % size): int(c) for k, c in zip(found, counts)}


def _row(node: str, part: str, path: str, file: str, value: float, reason: str) -> dict:
    return dict(zip(PROBLEM_COLUMNS, (node, part, path, file, value, reason)))


def _against_plans(table: pd.DataFrame, keys: _Keys, plans: Mapping[str, Plan],
                   lost: Mapping[str, set[str]]) -> list[dict]:
    if not plans:
        return []
    ran = table["status"].to_numpy() != "skipped"
    have: dict[str, dict[str, int]] = {}
    for (node, file), count in keys.pairs(keys.node, keys.file, len(keys.files), ran).items():
        held = have.setdefault(str(keys.nodes[node]), {})
        name = keys.files[file]
        held[name] = max(held.get(name, 0), count)  # one name in two RUNS folders: the fuller
    rows = []
    for host, plan in sorted(plans.items()):
        held = have.get(host, {})
        for name, planned in plan.files.items():
            if planned <= 0 or name in lost.get(host, ()):
                continue
            if name not in held:
                rows.append(_row(host, "file", "", name, np.nan,
                                 f"{name} missing: {planned} cases planned"))
            elif held[name] < planned:
                rows.append(_row(host, "file", "", name, np.nan,
                                 f"{name}: {held[name]} of {planned} planned cases"))
    return rows


def _most(sets: Iterable[set]) -> set:
    """The members that more than half of the sets hold."""
    sets = list(sets)
    seen = Counter(m for members in sets for m in members)
    return {m for m, c in seen.items() if 2 * c > len(sets)}


def _against_kind(keys: _Keys, plans: Mapping[str, Plan],
                  lost: Mapping[str, set[str]]) -> list[dict]:
    """Nodes without a plan: what most nodes of their kind have and they lack."""
    count = len(keys.nodes)
    sizes = keys.pairs(keys.node, keys.family, len(keys.families))
    families: list[set[int]] = [set() for _ in range(count)]
    for node, family in sizes:
        families[node].add(family)
    files = [set(lost.get(str(n), ())) for n in keys.nodes]
    for node, file in keys.pairs(keys.node, keys.file, len(keys.files)):
        files[node].add(keys.files[file])
    by_kind: dict[str, list[int]] = {}
    for node, kind in enumerate(keys.kinds):
        by_kind.setdefault(kind, []).append(node)
    rows = []
    for nodes in by_kind.values():
        usual_families = _most(families[n] for n in nodes)
        usual_files = _most(files[n] for n in nodes)
        usual_counts = {}
        for family in usual_families:
            cases, held = Counter(sizes[(n, family)] for n in nodes
                                  if (n, family) in sizes).most_common(1)[0]
            if 2 * held > len(nodes):
                usual_counts[family] = cases
        for n in nodes:
            node = str(keys.nodes[n])
            if node in plans:
                continue
            for family in sorted(keys.families[f] for f in usual_families - families[n]):
                rows.append(_row(node, "file", "", "", np.nan,
                                 f"no {family} cases (most nodes of its kind have them)"))
            for name in sorted(usual_files - files[n]):
                rows.append(_row(node, "file", "", name, np.nan,
                                 f"{name} missing (most nodes of its kind have it)"))
            for family, wanted in sorted(usual_counts.items()):
                have = sizes.get((n, family), 0)
                if 0 < have < wanted:
                    rows.append(_row(node, "file", "", "", np.nan,
                                     f"{keys.families[family]}: {have} of the {wanted} cases "
                                     "most nodes of its kind have"))
    return rows


def _cases(table: pd.DataFrame, keys: _Keys, names: Mapping[str, str]) -> list[dict]:
    """Failed cases and impossible values, each with its file, case and value."""
    status = table["status"].to_numpy()
    value = table["value"].to_numpy(dtype=float)
    ok = status == "ok"
    bandwidth = table["higher_is_better"].to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        not_positive = ok & ~(np.isfinite(value) & (value > 0))
        slow = ok & ~bandwidth & (value < LATENCY_FLOOR_NS)
    if not_positive.any():  # a memcpy latency case has no bandwidth by design
        where = np.flatnonzero(not_positive)
        latency = table["path"].to_numpy()[where].astype(str)
        not_positive[where[np.char.find(latency, NO_BANDWIDTH) >= 0]] = False
    bound = _bounds(table, keys, ok & bandwidth & ~not_positive)
    with np.errstate(invalid="ignore"):
        above = value > bound
    rows = []
    picked = status == "failed"
    of_file: dict = {}
    if picked.any():  # "3 of 112 cases of the file failed": one case or the whole file
        files = len(keys.files)
        failed = keys.pairs(keys.node, keys.file, files, picked)
        every = keys.pairs(keys.node, keys.file, files, np.isin(keys.node, [n for n, _ in failed]))
        shown_as = table[FILE].cat.categories
        of_file = {(str(keys.nodes[n]), shown_as[f]): f" ({c} of {every[(n, f)]} cases of "
                   "the file failed)" for (n, f), c in failed.items() if c > 1}
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


def _bounds(table: pd.DataFrame, keys: _Keys, rows: np.ndarray) -> np.ndarray:
    """PEAK_MARGIN x the theoretical peak of each selected row's parts (NaN elsewhere or
    where no part has a published figure), computed once per (node kind, path): the
    topology is read from one file of each kind."""
    bound = np.full(len(table), np.nan)
    if not rows.any():
        return bound
    where = np.flatnonzero(rows)
    kind_of_node, kinds = pd.factorize(keys.kinds)
    kind = kind_of_node[keys.node[where]]
    path, paths = pd.factorize(table["path"].to_numpy()[where])
    combos, first, back = np.unique(kind.astype(np.int64) * len(paths) + path,
                                    return_index=True, return_inverse=True)
    component, files = table["component"].to_numpy(), table[FILE].to_numpy()
    models: dict[int, Callable[[str], float]] = {}
    peaks = np.empty(len(combos))
    for i, (combo, row) in enumerate(zip(combos, where[first])):
        k = int(combo) // len(paths)
        if k not in models:
            try:
                models[k] = _peak_of(PeakModel(load_cases_run(Path(files[row])).topology))
            except RunFileError:
                models[k] = lambda _: np.nan
        two_way = 2.0 if TWO_WAY.search(paths[int(combo) % len(paths)]) else 1.0
        peaks[i] = PEAK_MARGIN * two_way * models[k](component[row])
    bound[where] = peaks[back]
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
    if "retest" in nodes:  # a failed node is not retested (retest.json leaves it out)
        nodes.loc[first.index, "retest"] = ""
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
