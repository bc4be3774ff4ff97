"""Report section: the conditions the cases ran in and the causes they show (issues 40, 47).

Per node with recorded conditions (docs/schema.md "Conditions"; older files have none and
the section says nothing of them), once over all its runs (a mempath-mpi job's other
machines are nodes of their own): what NVML said in words, its GPUs' and CPUs' readings,
the host's facts (a fact that differs between runs names the runs), the conditions that
drain a node on their own; then each read, write or host transfer below EXPECTED_SHARE of
its path's theoretical peak beside what its window shows (the rules of
analysis/model/causes.py that fired, or "nothing in the recorded conditions explains it",
never a guessed cause), and apart from them the other cases whose window fired a rule: a
condition seen where a figure is not low (a power cap held during a GEMM at the GPU's
default limit) is shown, not blamed. Each case row names its run.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..model import causes
from ..model.case_words import case_words, cell_int
from ..model.peaks import PeakModel
from ..render.items import Context, item
from ..render.mdtext import code, text
from ..render.tables import markdown
from ..results import conditions as recorded
from ..results.cases import best
from ..results.families import FAMILIES
from ..results.io import Run
from .sections import Part

#: The figure a case is said by, per family: the first of these its cases table holds.
FIGURES = (("median_GBps", "GB/s"), ("best_GBps", "GB/s"), ("median_ns", "ns"), ("median_TFLOPs", "TFLOP/s"),
           ("median_Mops", "Mop/s"), ("median_tokens_per_s", "tokens/s"), ("busbw_GBps", "GB/s"))


def _figure(row: Mapping[str, Any]) -> tuple[float, str]:
    for column, unit in FIGURES:
        value = row.get(column)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            return float(value), unit
    return math.nan, ""


def standing(family: str, table: pd.DataFrame) -> set[int]:
    """The cases that stand for a path, whose share of its peak says whether it is slow: a
    bw read or write the path matrix shows (results.cases.best: the GPU grid kernel, a CPU's
    largest thread count; not a one-block kernel nor a sweep's smaller points), a one-way
    host transfer of one GPU at the largest size of its sweep (a small copy is bound by its
    latency, not its link)."""
    if family == "bw" and {"op", "pu", "mem"} <= set(table):
        chosen = best(table[table["op"].isin(["read", "write"])], ["op", "pu", "mem"])
        return {int(i) for i in chosen["case_id"]} if not chosen.empty else set()
    if family == "memcpy" and {"direction", "gpu", "host_numa", "size_bytes", "status"} <= set(table):
        copies = table[(table["status"] == "ok") & table["direction"].isin(["h2d", "d2h"])
                       & (table["gpu"].map(cell_int) >= 0)
                       & (table.get("dst_gpu", pd.Series(-1, index=table.index)).map(cell_int) < 0)
                       & (table.get("mode", pd.Series("bandwidth", index=table.index)) == "bandwidth")]
        keys = [k for k in ("gpu", "host_numa", "alloc", "direction", "engine") if k in copies]
        largest = copies.loc[copies.groupby(keys)["size_bytes"].idxmax()] if len(copies) else copies
        return {int(i) for i in largest["case_id"]}
    return set()


def share_of_peak(family: str, row: Mapping[str, Any], model: PeakModel | None) -> float:
    """The case's median over its path's theoretical peak, where one path bounds it: a bw
    read or write, a host<->device transfer one way; NaN elsewhere."""
    if model is None or str(row.get("status")) != "ok":
        return math.nan
    if family == "bw" and row.get("op") in ("read", "write"):
        pu, mem, via, value = row.get("pu"), row.get("mem"), row.get("via"), row.get("median_GBps")
    elif family == "memcpy" and row.get("direction") in ("h2d", "d2h") and cell_int(row.get("gpu")) >= 0 \
            and cell_int(row.get("dst_gpu")) < 0:
        pu, mem, via, value = f"gpu{row['gpu']}", f"numa{row['host_numa']}", row.get("via"), row.get("median_GBps")
    else:
        return math.nan
    try:
        peak = model.path(str(pu), str(mem), str(via) or None)
    except (KeyError, ValueError):
        return math.nan
    return float(value) / peak.gbps if peak.gbps and value is not None else math.nan


def _range(values: list[float], fmt: str = ",.0f") -> str:
    known = [v for v in values if isinstance(v, (int, float)) and not math.isnan(v) and v >= 0]
    if not known:
        return ""
    low, high = min(known), max(known)
    return format(low, fmt) if low == high else f"{format(low, fmt)} to {format(high, fmt)}"


@dataclass
class _Seen:
    """One run's conditions on one node: a result file's own, or a job's other machine's
    (``run`` None: its cases are in the file of the machine that wrote it)."""

    name: str
    cond: recorded.Conditions
    attrs: Mapping[str, Any]
    topology: Mapping[str, Any]
    run: Run | None


def _by_node(runs: list[Run]) -> dict[str, list[_Seen]]:
    """Every recorded conditions of the runs, by the node they were read on (its heading's
    words): a job's other machine under its host name, or, where that is the name of the
    machine that wrote the file (containers and VMs share names), as the job's other machine."""
    nodes: dict[str, list[_Seen]] = {}
    for run in runs:
        cond = recorded.of_tables(run.attrs, run.tables, run.topology)
        if cond is None:
            continue
        nodes.setdefault(code(run.node), []).append(_Seen(run.name, cond, run.attrs, run.topology, run))
    for run in runs:
        for host, other in recorded.machines(run.attrs).items():
            name = f"{code(host)} (the other machine of the job {code(run.name)})" if host == run.node else code(host)
            nodes.setdefault(name, []).append(_Seen(f"{run.name} on {host}", other, {}, {}, None))
    return nodes


def _names(seen: list[_Seen]) -> str:
    return ", ".join(code(s.name) for s in seen)


def _alike(label: str, values: dict[str, list[_Seen]], all_runs: int) -> str:
    """A fact of the node: its one value, or each value with the runs that saw it."""
    if len(values) == 1 and len(next(iter(values.values()))) == all_runs:
        return f"{label} {next(iter(values))}"
    return f"{label} " + ", ".join(f"{value} ({_names(seen)})" for value, seen in values.items())


def _gpu_lines(seen: list[_Seen]) -> list[str]:
    """One row per GPU of the node over all its runs' readings."""
    rows = []
    gpus = sorted({g for s in seen for _, g in s.cond.gpus} | {g for s in seen for g in s.cond.gpu_facts})
    for gpu in gpus:
        facts = next((s.cond.gpu_facts[gpu] for s in seen if gpu in s.cond.gpu_facts), {})
        per_run = [[r for (_, g), r in sorted(s.cond.gpus.items()) if g == gpu] for s in seen]
        read = [r for rows_ in per_run for r in rows_]

        def seen_(column: str, fmt: str = ",.0f") -> str:
            return _range([r[column] for r in read], fmt)
        link = f"gen{facts.get('pcie_max_gen')} x{facts.get('pcie_max_width')}" if facts.get("pcie_max_width") else ""
        grew = [r[-1]["ecc_uncorrected"] - r[0]["ecc_uncorrected"] for r in per_run
                if r and r[0]["ecc_uncorrected"] >= 0 and r[-1]["ecc_uncorrected"] >= 0]
        rows.append([f"gpu{gpu}", facts.get("name", ""),
                     f"{facts.get('max_sm_clock_mhz') or ''} / {facts.get('max_mem_clock_mhz') or ''}",
                     seen_("sm_clock_mhz"), seen_("power_w"), seen_("temperature_c"),
                     link, f"gen{seen_('pcie_gen')} x{seen_('pcie_width')}" if read and read[0]["pcie_width"] > 0 else "",
                     f"{seen_('nvlink_active')} of {len(facts.get('nvlinks') or [])}" if facts.get("nvlinks") else "",
                     f"{sum(grew):,}" if grew else "", facts.get("missing", "")])
    if not rows:
        return []
    return markdown(["GPU", "model", "max SM / memory MHz", "SM MHz at readings", "power W", "temperature C",
                     "PCIe max", "PCIe at readings", "NVLinks active", "uncorrectable ECC (during the runs)",
                     "not given by NVML"], rows)


def _cpu_lines(seen: list[_Seen]) -> list[str]:
    """The CPU nodes' governors and frequencies, or one line where the node has no cpufreq."""
    rows = []
    for numa in sorted({n for s in seen for _, n in s.cond.cpus}):
        read = [s.cond.cpus[(r, numa)] for s in seen for r in sorted(s.cond.readings) if (r, numa) in s.cond.cpus]
        facts = [n for s in seen for n in s.cond.host.get("cpu_nodes", []) if isinstance(n, dict) and n.get("numa") == numa]
        cells = [", ".join(sorted({str(r["governor"]) for r in read if r["governor"]})),
                 _range([f.get("max_mhz", math.nan) for f in facts]),
                 _range([f.get("cpuinfo_max_mhz", math.nan) for f in facts]),
                 _range([r["freq_mhz"] for r in read])]
        if any(cells):
            rows.append([f"cpu{numa}", *cells])
    if not rows:
        return ["No cpufreq on this node: no CPU governor or clock recorded.", ""]
    return markdown(["CPU node", "governor", "max MHz (scaling)", "max MHz (hardware)", "MHz at readings"], rows)


def _host_lines(seen: list[_Seen]) -> list[str]:
    """The host's facts, each once, with the runs that saw another value where they differ."""
    facts: dict[str, dict[str, dict[str, list[_Seen]]]] = {}

    def add(label: str, value: str, s: _Seen) -> None:
        facts.setdefault(label, {}).setdefault(value, []).append(s)
    for s in seen:
        host = s.cond.host
        pages = ", ".join(f"{k}: {v}" for k, v in (host.get("hugepages") or {}).items())
        if host.get("cpufreq_driver"):  # where there is none, the CPU table's line says so
            add("cpufreq driver", code(host["cpufreq_driver"]), s)
        if s.run is not None:
            add("transparent huge pages", f"{code(s.attrs.get('thp_enabled', '?'))} (defrag "
                f"{code(host.get('thp_defrag') or '?')})", s)
        add("automatic NUMA balancing", code(host.get("numa_balancing")), s)
        add("huge pages reserved", code(pages or "none"), s)
        add("kernel memory options", code(host.get("kernel_memory_options") or "none"), s)
    said = [_alike(label, values, sum(len(v) for v in values.values())) for label, values in facts.items()]
    loads = [r["load1"] for s in seen for r in s.cond.readings.values()]
    said.append(f"load average at readings {_range(loads, '.1f') or 'not read'}")
    free = _free_memory(seen)
    return ["Host: " + "; ".join(said) + "." + (f" Free memory at the start: {free}." if free else ""), ""]


def _free_memory(seen: list[_Seen]) -> str:
    """Each NUMA node's free memory at its runs' starts, of its total (the topology's)."""
    nodes: dict[int, tuple[list[float], float]] = {}
    for s in seen:
        for n in (s.topology.get("numa_nodes") or []) if isinstance(s.topology, Mapping) else []:
            if isinstance(n, dict) and isinstance(n.get("id"), int) and isinstance(n.get("mem_free_bytes"), (int, float)) \
                    and isinstance(n.get("mem_total_bytes"), (int, float)) and n["mem_total_bytes"] > 0:
                free, _ = nodes.setdefault(n["id"], ([], float(n["mem_total_bytes"])))
                free.append(float(n["mem_free_bytes"]) / 2**30)
    return ", ".join(f"numa{numa} {_range(free, ',.1f')} of {total / 2**30:,.1f} GiB"
                     for numa, (free, total) in sorted(nodes.items()))


def _case_rows(seen: list[_Seen], models: Mapping[str, PeakModel]) -> tuple[list[list[str]], list[list[str]], int]:
    """(slow, seen, judged): the paths below EXPECTED_SHARE of their peak with their causes (or
    NOTHING), the other cases whose window fired a rule, whose figures are not below what a
    healthy node gives (or have no peak to say so): shown, not blamed; and how many paths had
    a peak to be judged by."""
    slow, fired, judged = [], [], 0
    for s in seen:
        run = s.run
        if run is None:
            continue
        model = models.get(run.node)
        for family in FAMILIES:
            table = run.tables.get(f"{family}/cases")
            if table is None or table.empty or "case_id" not in table:
                continue
            paths = standing(family, table)
            for row in table.to_dict("records"):
                found = causes.case_causes(s.cond, int(row["case_id"]), family)
                if found is None:
                    continue
                share = share_of_peak(family, row, model) if int(row["case_id"]) in paths else math.nan
                judged += math.isfinite(share)
                below = math.isfinite(share) and share < causes.EXPECTED_SHARE
                if not found and not below:
                    continue
                value, unit = _figure(row)
                figure = f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.2f} {unit}" \
                    if math.isfinite(value) else str(row.get("status", ""))
                (slow if below else fired).append([code(run.name), case_words(family, row, run.topology),
                                                   str(row["case_id"]), figure,
                                                   f"{share * 100:.0f} %" if math.isfinite(share) else "",
                                                   causes.words(found)])
    return slow, fired, judged


@item("conditions", "", "Conditions and causes", "section",
      ("conditions/windows", "conditions/readings", "conditions/cpus", "conditions/gpus"), "", order=7)
def _section(ctx: Context) -> Part:
    """Each node's conditions once (its GPUs, CPUs and host over all its runs), then the
    cases whose figures or conditions say something, with the run they are of."""
    part = Part()
    nodes = _by_node(ctx.runs.runs)
    share = f"{causes.EXPECTED_SHARE * 100:.0f} %"
    if nodes:
        part.lines += [f"What NVML and the host said between the cases, node by node, over all its runs "
                       f"(docs/methodology.md, \"Conditions\"). A path below {share} of its theoretical peak is "
                       "listed with what its conditions show (the rules of analysis/model/causes.py), never a "
                       "guessed cause; a case whose conditions fired a rule but whose figure is not low (or has "
                       "no peak to say so) is listed apart: shown, not blamed.", ""]
    said: dict[tuple[str, str], str] = {}  # (what, its lines) -> the first node they were said of
    for node, seen in nodes.items():
        spent = sum(s.cond.overhead()[0] for s in seen)
        span = sum(s.cond.overhead()[1] for s in seen)
        readings = sum(len(s.cond.readings) for s in seen)
        cost = f" ({spent / span * 100:.2f} % of the {span:,.1f} s they span)" if span > 0 else ""
        runs = f"{len(seen)} runs" if len(seen) > 1 else "its run"
        nvml: dict[str, list[_Seen]] = {}
        for s in seen:
            nvml.setdefault(causes.nvml_words(s.cond.nvml), []).append(s)
        gpus = (f"{next(iter(nvml))}." if len(nvml) == 1 else
                "GPU conditions: " + "; ".join(f"{words} ({_names(of)})" for words, of in nvml.items()) + ".")
        part.lines += [f"### Conditions on {node}", "",
                       f"{gpus[0].upper()}{gpus[1:]} {readings:,} readings between the cases of {runs} took "
                       f"{spent * 1e3:,.1f} ms{cost}.", ""]
        for what, lines in (("GPUs", _gpu_lines(seen)), ("CPUs", _cpu_lines(seen)), ("Host", _host_lines(seen)),
                            ("Drains", _drains(seen))):
            key = (what, "\n".join(lines))
            if lines and key in said:  # alike nodes (the nodes of one machine): said once
                lines = [f"{what}: as on {said[key]}.", ""]
            said.setdefault(key, node)
            part.lines += lines
        slow, fired, judged = _case_rows(seen, ctx.models)
        if slow:
            part.lines += [f"Paths below {share} of their peak:", ""]
            part.lines += markdown(["run", "case", "case_id", "figure", "of peak", "cause"], slow, right={2, 3, 4})
        elif judged:
            part.lines += [f"No path below {share} of its peak ({judged} with a known peak).", ""]
        elif any(s.run is not None for s in seen):
            part.lines += ["No path has a known theoretical peak: none is judged slow.", ""]
        if fired:
            part.lines += ["Other cases whose conditions fired a rule:", ""]
            if any(row[4] for row in fired):
                part.lines += markdown(["run", "case", "case_id", "figure", "of peak", "condition"], fired,
                                       right={2, 3, 4})
            else:  # no peak known for any of them: no column of empty cells
                part.lines += markdown(["run", "case", "case_id", "figure", "condition"],
                                       [row[:4] + row[5:] for row in fired], right={2, 3})
    return part


def _drains(seen: list[_Seen]) -> list[str]:
    drains = list(dict.fromkeys(c.text for s in seen for c in causes.node_conditions(s.cond)))
    if not drains:
        return []
    return ["Conditions that take the node out on their own (`analysis fleet` drains it):", ""] + \
        [f"- {text(d)}" for d in drains] + [""]
