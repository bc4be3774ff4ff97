"""A node's check of itself between jobs (slurm/healthcheck.sh, docs/healthcheck.md): the
figures of one short run against this node's own reference, the GPUs Slurm's gres names
against those the node has, and the conditions that drain a node on their own.

The reference of a figure is, in this order: this node's median over the nights of the fleet
history (``reference``: written from `fleet-history`'s file, at least MIN_NIGHTS nights), the
shipped reference of its GPU kind (``kind-reference``: GPU paths only, every figure naming the
recorded run it comes from), or none (the node's presence and conditions are checked, and the
verdict says so). A figure fails as the fleet's do (score.judge): below the reference by more
than the minimum change AND beyond k robust deviations of the reference's measured spread."""
from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..model import causes
from ..results import conditions
from ..results.h5file import RunFileError, walk
from ..results.io import shown
from .score import Options, judge
from .table import CAUSE, CONDITION, WORDS, fleet_columns, load_cases_run

FORMAT = "mempath-health-reference"
VERSION = 1
#: Fewer nights give no spread worth judging by: the kind's reference is used instead.
MIN_NIGHTS = 3
#: The shipped references of GPU kinds (kind-reference over recorded runs; docs/healthcheck.md).
KINDS = Path(__file__).with_name("data") / "health_kinds.json"
#: Clock event reasons that hold an idle GPU's clocks down (nvmlClocksEventReason*): a GPU
#: that shows one before anything ran on it is throttled by its hardware, not by work.
IDLE_DRAIN_BITS = 0x8 | 0x20 | 0x40 | 0x80  # HW slowdown, SW thermal, HW thermal, HW power brake
#: Slurm keeps a reason; a longer one is cut with a count of what was left out.
REASON_CHARS = 240
LOG_COLUMNS = ("time_utc", "node", "mode", "verdict", "elapsed_s", "reference", "figures", "reason")


@dataclass
class Verdict:
    node: str
    reference: str = "none"                              # node history, GPU kind, both, none
    failures: list[str] = field(default_factory=list)   # each names part, figure, reference, cause
    low: int = 0                                         # of them, figures below their reference
    figures: list[str] = field(default_factory=list)    # "gpu0 HBM read 4,315 GB/s (99 % of 4,379)"
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def retest(self) -> bool:
        """Only figures failed: measured once more before a drain, as the fleet's retest pass
        confirms a flag (on the H100 of 2026-12-07 one check in 25 read H2D 6-8 % low once)."""
        return bool(self.failures) and self.low == len(self.failures)

    def reason(self) -> str:
        """The drain reason: one line, "mempath: " first (the script resumes only its own)."""
        text = "mempath: " + self.failures[0]
        for k, more in enumerate(self.failures[1:], 1):
            rest = len(self.failures) - k
            if len(text) + len(more) + 2 > REASON_CHARS - 12:
                return f"{text[:REASON_CHARS - 12]}; +{rest} more"
            text += "; " + more
        return text[:REASON_CHARS]


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def _generic(path: str) -> str:
    """A GPU path of any GPU and host node: the key of a GPU kind's reference."""
    return re.sub(r"\b(gpu|numa|cpu)[0-9]+\b", r"\1*", re.sub(r"\b(gpus|host_numa)=[0-9]+", r"\1=*", path))


def _gpu_models(topology: Mapping[str, Any]) -> dict[int, str]:
    return {int(p["gpu"]): str(p.get("model", "")) for p in topology.get("processors", [])
            if p.get("kind") == "gpu" and isinstance(p.get("gpu"), int)}


def _kind_key(row: Mapping[str, Any], models: Mapping[int, str]) -> str | None:
    """``MODEL|generic path`` of a path of one GPU alone (its HBM, its copies to and from the
    host): figures that alike GPUs share on any host. None for a path of CPU cores."""
    gpus = {int(g) for g in re.findall(r"gpu([0-9]+)", str(row["component"]))}
    if len(gpus) != 1 or re.search(r"\bpu=cpu", str(row["path"])):
        return None
    model = models.get(gpus.pop())
    return f"{model}|{_generic(str(row['path']))}" if model else None


# ---------------------------------------------------------------------------- the run

def read_run(*folders: Path) -> tuple[pd.DataFrame, list[conditions.Conditions], dict[str, Any]]:
    """The fleet rows of every result file in ``folders``, their conditions, and the topology.
    A case measured in several folders (a retest) keeps its best figure: it fails only where
    every measurement of it fails."""
    files = [f for folder in folders for f in sorted(folder.glob("*.h5"))]
    if not files:
        raise InputError(f"{', '.join(map(shown, folders))}: no result file; valid: the folder "
                         "healthcheck.sh measured into")
    parts, recorded, topology = [], [], {}
    for path in files:
        try:
            run = load_cases_run(path)
            with walk(path) as root:
                recorded.append(conditions.of_group(root, run.attrs, run.topology))
        except RunFileError as error:
            raise InputError(str(error)) from None
        parts.append(pd.DataFrame(fleet_columns(run)))
        topology = topology or run.topology
    table = pd.concat(parts, ignore_index=True)
    sign = np.where(table["higher_is_better"].to_numpy(dtype=bool), -1.0, 1.0)
    key = sign * table["value"].to_numpy(dtype=float)
    order = table.assign(_ok=table["status"] != "ok", _key=np.where(np.isnan(key), np.inf, key))
    best = order.sort_values(["_ok", "_key"], kind="stable").drop_duplicates(["path", "metric"])
    return (table.loc[sorted(best.index)].reset_index(drop=True), [c for c in recorded if c is not None],
            topology)


# ---------------------------------------------------------------------------- references

def _check_reference(data: Any, path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{owner: {key: {"median", "mad", "n", "source"}}} of a reference file, or InputError."""
    valid = (f'valid: JSON {{"format": "{FORMAT}", "version": {VERSION}, "nodes"|"kinds": '
             '{NAME: {PATH: {"median": X, "mad": X, "n": N, "source": TEXT}}}} '
             "(python -m analysis healthcheck reference|kind-reference)")
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise InputError(f"{shown(path)}: not a health reference; {valid}")
    owners = data.get("nodes", data.get("kinds"))
    if not isinstance(owners, dict):
        raise InputError(f"{shown(path)}: neither 'nodes' nor 'kinds' is an object; {valid}")
    for owner, entries in owners.items():
        if not isinstance(entries, dict):
            raise InputError(f"{shown(path)}: {owner!r} is not an object of paths; {valid}")
        for key, e in entries.items():
            good = isinstance(e, dict) and all(
                isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool) and math.isfinite(e[k])
                for k in ("median", "mad", "n")) and e["median"] > 0 and e["mad"] >= 0 and e["n"] >= 1
            if not good or not isinstance(e.get("source"), str):
                raise InputError(f"{shown(path)}: {owner!r} {key!r} is not a reference figure; {valid}")
    return owners


def load_reference(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as error:  # ValueError: JSON's and UTF-8's
        raise InputError(f"{shown(path)}: cannot read the reference ({str(error).splitlines()[0]}); "
                         "valid: a file of python -m analysis healthcheck reference|kind-reference") from None
    return _check_reference(data, path)


def _write(out: Path, key: str, owners: Mapping[str, Any], source: str) -> None:
    data = {"format": FORMAT, "version": VERSION, "source": source, key: owners}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(out)  # a node reading it meanwhile sees the old file or the new, never half


def node_reference(db: Path, out: Path, nights: int = 30) -> int:
    """Each node's median and MAD over its last ``nights`` nights in the fleet history, per
    path and metric (MIN_NIGHTS at least); returns the number of nodes written."""
    from . import history
    history.check_window(nights, 0.05)
    con = history.connect(db, read_only=True)
    try:
        rows = con.execute(
            "WITH recent AS (SELECT * FROM fleet WHERE NOT synthetic AND status = 'ok' AND isfinite(value) "
            "  AND night > (SELECT max(night) FROM fleet WHERE NOT synthetic) - ?::INTEGER) "
            "SELECT node, path, metric, median(value), mad(value), count(DISTINCT night), min(night), max(night) "
            "FROM recent GROUP BY node, path, metric HAVING count(DISTINCT night) >= ?",
            [nights, MIN_NIGHTS]).fetchall()
    finally:
        con.close()
    owners: dict[str, dict[str, Any]] = {}
    for node, path, metric, median, mad, n, first, last in rows:
        if median and median > 0:
            owners.setdefault(node, {})[f"{path}|{metric}"] = {
                "median": float(median), "mad": float(mad), "n": int(n),
                "source": f"{db.name}: {n} nights {first}..{last}"}
    _write(out, "nodes", owners, f"fleet history {db}, last {nights} nights, >= {MIN_NIGHTS} nights a figure")
    return len(owners)


def kind_reference(runs: Sequence[Path], out: Path) -> int:
    """The GPU kinds' references from recorded runs (each a folder of one node's files): per
    GPU model and path, the median of the runs' figures, their MAD, and each source named."""
    values: dict[str, dict[str, list[tuple[float, str]]]] = {}
    for folder in runs:
        table, _, topology = read_run(folder)
        models = _gpu_models(topology)
        for row in table.to_dict("records"):
            key = _kind_key(row, models)
            if key and row["status"] == "ok" and math.isfinite(row["value"]) and not row[CONDITION]:
                model, path = key.split("|", 1)
                values.setdefault(model, {}).setdefault(f"{path}|{row['metric']}", []).append(
                    (float(row["value"]), f"{folder} ({row['night']})"))
    owners = {}
    for model, paths in values.items():
        owners[model] = {}
        for key, found in paths.items():
            figures = np.array([v for v, _ in found])
            median = float(np.median(figures))
            owners[model][key] = {"median": median, "mad": float(np.median(np.abs(figures - median))),
                                  "n": len(found), "source": "; ".join(s for _, s in found)}
    _write(out, "kinds", owners, "python -m analysis healthcheck kind-reference " + " ".join(map(str, runs)))
    return sum(len(p) for p in owners.values())


# ---------------------------------------------------------------------------- the verdict

def _gres(gpus: int | None, gres_type: str, topology: Mapping[str, Any],
          recorded: Sequence[conditions.Conditions]) -> list[str]:
    """The GPUs Slurm's gres names against the GPUs CUDA sees (and those only NVML lists)."""
    models = _gpu_models(topology)
    lost = sorted({f"gpu{g} {f['uuid']}" if f.get("uuid") else f"gpu{g} ({f.get('missing') or 'no UUID'})"
                   for c in recorded for g, f in c.gpu_facts.items() if f.get("cuda") == 0})
    out = []
    if gpus is not None and len(models) < gpus:
        seen = f"CUDA sees {len(models)}" + (f"; NVML also lists {', '.join(lost)}" if lost else "")
        out.append(f"{gpus - len(models)} of {gpus} GPUs missing (gres gpu:{gres_type + ':' if gres_type else ''}"
                   f"{gpus}, {seen})")
    wanted = re.sub(r"[^a-z0-9]", "", gres_type.lower())
    if wanted:
        for g, model in sorted(models.items()):
            if wanted not in re.sub(r"[^a-z0-9]", "", model.lower()):
                out.append(f"gpu{g} is {model}, gres says gpu:{gres_type}")
    return out


def _idle_clocks(recorded: Sequence[conditions.Conditions]) -> list[str]:
    """A GPU whose clocks a hardware reason held down in the run's first reading (idle)."""
    out = []
    for cond in recorded[:1]:
        first = min(cond.readings, default=None)
        for (reading, gpu), row in sorted(cond.gpus.items()):
            bits = int(row.get("event_reasons", -1) if row.get("event_reasons") is not None else -1)
            if reading == first and bits > 0 and bits & IDLE_DRAIN_BITS:
                names = ", ".join(causes.reason_names(bits & IDLE_DRAIN_BITS))
                out.append(f"gpu{gpu}'s clocks held down at idle ({names})")
    return out


def _judged(table: pd.DataFrame, topology: Mapping[str, Any], node: str, nodes: Mapping[str, Any],
            kinds: Mapping[str, Any], options: Options) -> tuple[pd.DataFrame, set[str]]:
    """The rows that have a reference, judged against it; the references' kinds used."""
    models = _gpu_models(topology)
    host = str(table["node"].iloc[0]) if len(table) else ""
    own = nodes.get(node) or nodes.get(host) or {}  # Slurm's name, else the host's (the history's)
    picked, used = [], set()
    for row in table.to_dict("records"):
        key = f"{row['path']}|{row['metric']}"
        ref, whose = own.get(key), "this node's"
        if ref is None:
            kind = _kind_key(row, models)
            model = kind.split("|", 1)[0] if kind else ""
            ref = kinds.get(model, {}).get(f"{kind.split('|', 1)[1]}|{row['metric']}") if kind else None
            whose = f"the {model}'s"
        if ref is None:
            continue
        used.add("node history" if whose == "this node's" else "GPU kind")
        picked.append({**row, "fleet_median": ref["median"], "mad": ref["mad"], "whose": whose,
                       "source": ref["source"]})
    if not picked:
        return pd.DataFrame(), used
    judged = pd.DataFrame(picked)
    # Every case with a reference is one the node ran before: one that did not run now fails.
    return judge(judged, options, ran=pd.Series(1.0, index=judged.index)), used


def verdict(table: pd.DataFrame, recorded: Sequence[conditions.Conditions], topology: Mapping[str, Any],
            node: str, gres_gpus: int | None = None, gres_type: str = "",
            nodes: Mapping[str, Any] | None = None, kinds: Mapping[str, Any] | None = None,
            options: Options | None = None) -> Verdict:
    out = Verdict(node)
    out.failures += _gres(gres_gpus, gres_type, topology, recorded)
    drains = sorted({c.text for cond in recorded for c in causes.node_conditions(cond)})
    out.failures += drains + _idle_clocks(recorded)
    judged, used = _judged(table, topology, node, nodes or {}, kinds or {}, options or Options())
    out.reference = " and ".join(sorted(used)) or "none"
    for row in judged.to_dict("records") if len(judged) else []:
        value, ref = row["value"], row["fleet_median"]
        if row["flag"] in ("failed", "not run"):
            out.failures.append(f"{row[WORDS]} {row['flag']} ({row['whose']} reference {_number(ref)})")
            continue
        share = f"{100 * value / ref:.0f} % of {row['whose']} {_number(ref)}"
        out.figures.append(f"{row[WORDS]} {_number(value)} ({share})")
        if row["flag"]:
            cause = row[CAUSE] if row[CAUSE] and row[CAUSE] != causes.NOTHING else ""
            unit = " GB/s" if str(row["metric"]).endswith("GBps") else ""
            out.failures.append(f"{row[WORDS]} {_number(value)}{unit}, {share}" + (f" ({cause})" if cause else ""))
            out.low += 1
    failed = table[(table["status"] == "failed")]
    for row in failed.to_dict("records"):
        text = f"{row[WORDS]} failed"
        if not any(f.startswith(text) for f in out.failures):
            out.failures.append(text)
    if out.reference == "none":
        out.notes.append("no reference for this node or its GPU kind: presence and conditions checked only")
    return out


def append_log(log: Path, verdict_: Verdict, mode: str, elapsed_s: float) -> None:
    """One row a check, so that a drifting node shows before it fails."""
    new = not log.exists() or log.stat().st_size == 0
    with log.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(LOG_COLUMNS)
        writer.writerow([dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), verdict_.node, mode,
                         "ok" if verdict_.ok else "drain", f"{elapsed_s:.1f}", verdict_.reference,
                         "; ".join(verdict_.figures), "" if verdict_.ok else verdict_.reason()])
