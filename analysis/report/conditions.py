"""Report section: the conditions each run's cases ran in and the causes they show (issue 40).

Per run with recorded conditions (docs/schema.md "Conditions"; older files have none and
the section says nothing of them): what NVML and the host said at the start, what the
readings between cases saw, the conditions that drain a node on their own; then each read,
write or host transfer below EXPECTED_SHARE of its path's theoretical peak beside what its
window shows (the rules of analysis/model/causes.py that fired, or "nothing in the recorded
conditions explains it", never a guessed cause), and apart from them the other cases whose
window fired a rule: a condition seen where a figure is not low (a power cap held during a
GEMM at the GPU's default limit) is shown, not blamed.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..model import causes
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


def _int(value: Any, default: int = -1) -> int:
    """A cell as an integer; ``default`` where it is missing (None, NaN: an older file)."""
    try:
        return default if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)
    except (TypeError, ValueError):
        return default


#: The words of a case of each family whose words are its columns alone.
CASE_WORDS = {
    "stream": "{pu} STREAM {kernel} on {mem} ({alloc})",
    "chase": "{pu} latency of {mem} ({alloc})",
    "pingpong": "ping-pong {a}-{b} on {mem}",
    "gemm": "gpu{gpu} GEMM {dtype} n={n} ({a_mem})",
    "atomics": "{pu} atomics on {mem} ({alloc})",
    "llm": "gpu{gpu} {model} decode, weights in {weight_mem} ({placement})",
}


class _Cells(dict):
    def __missing__(self, key: str) -> None:  # an older file's missing column reads "None"
        return None


def case_text(family: str, row: Mapping[str, Any]) -> str:
    """A case in a few words: "gpu2 H2D (pinned numa0, ce)", "cpu0 read numa0 (numa)"."""
    get = row.get
    if family == "bw":
        dst = f" to {get('dst_mem')}" if get("dst_mem") else ""
        return f"{get('pu')} {get('op')} {get('mem')}{dst} ({get('alloc')})"
    if family == "memcpy":
        where = f"gpu{_int(get('dst_gpu'))}" if _int(get("dst_gpu")) >= 0 else f"numa{get('host_numa')}"
        return f"gpu{get('gpu')} {str(get('direction')).upper()} ({get('alloc')} {where}, {get('engine')})"
    if family in CASE_WORDS:
        return CASE_WORDS[family].format_map(_Cells(row))
    return f"{family} case {get('case_id')}"


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
                       & (table["gpu"].map(_int) >= 0)
                       & (table.get("dst_gpu", pd.Series(-1, index=table.index)).map(_int) < 0)
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
    elif family == "memcpy" and row.get("direction") in ("h2d", "d2h") and _int(row.get("gpu")) >= 0 \
            and _int(row.get("dst_gpu")) < 0:
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


def _gpu_lines(cond: recorded.Conditions) -> list[str]:
    rows = []
    for gpu in sorted({g for _, g in cond.gpus} | set(cond.gpu_facts)):
        facts = cond.gpu_facts.get(gpu, {})
        read = [r for (_, g), r in sorted(cond.gpus.items()) if g == gpu]

        def seen(column: str, fmt: str = ",.0f") -> str:
            return _range([r[column] for r in read], fmt)
        link = f"gen{facts.get('pcie_max_gen')} x{facts.get('pcie_max_width')}" if facts.get("pcie_max_width") else ""
        grew = (read[-1]["ecc_uncorrected"] - read[0]["ecc_uncorrected"]
                if read and read[0]["ecc_uncorrected"] >= 0 and read[-1]["ecc_uncorrected"] >= 0 else None)
        rows.append([f"gpu{gpu}", facts.get("name", ""),
                     f"{facts.get('max_sm_clock_mhz') or ''} / {facts.get('max_mem_clock_mhz') or ''}",
                     seen("sm_clock_mhz"), seen("power_w"), seen("temperature_c"),
                     link, f"gen{seen('pcie_gen')} x{seen('pcie_width')}" if read and read[0]["pcie_width"] > 0 else "",
                     f"{seen('nvlink_active')} of {len(facts.get('nvlinks') or [])}" if facts.get("nvlinks") else "",
                     "" if grew is None else f"{grew:,}", facts.get("missing", "")])
    if not rows:
        return []
    return markdown(["GPU", "model", "max SM / memory MHz", "SM MHz at readings", "power W", "temperature C",
                     "PCIe max", "PCIe at readings", "NVLinks active", "uncorrectable ECC (run)",
                     "not given by NVML"], rows)


def _host_lines(attrs: Mapping[str, Any], cond: recorded.Conditions) -> list[str]:
    host = cond.host
    nodes = {n.get("numa"): n for n in host.get("cpu_nodes", []) if isinstance(n, dict)}
    readings = sorted(cond.readings)
    rows = []
    for numa in sorted({n for _, n in cond.cpus}):
        read = [cond.cpus[(r, numa)] for r in readings if (r, numa) in cond.cpus]
        facts = nodes.get(numa, {})
        rows.append([f"cpu{numa}", ", ".join(sorted({str(r['governor']) for r in read if r["governor"]})),
                     _range([facts.get("max_mhz", math.nan)]), _range([facts.get("cpuinfo_max_mhz", math.nan)]),
                     _range([r["freq_mhz"] for r in read])])
    lines = markdown(["CPU node", "governor", "max MHz (scaling)", "max MHz (hardware)", "MHz at readings"], rows) \
        if rows else []
    pages = ", ".join(f"{k}: {v}" for k, v in (host.get("hugepages") or {}).items())
    facts = [f"cpufreq driver {code(host.get('cpufreq_driver') or 'none')}",
             f"THP {code(attrs.get('thp_enabled', '?'))} (defrag {code(host.get('thp_defrag') or '?')})",
             f"automatic NUMA balancing {code(host.get('numa_balancing'))}",
             f"huge pages reserved {code(pages or 'none')}",
             f"kernel memory options {code(host.get('kernel_memory_options') or 'none')}"]
    loads = [r["load1"] for r in cond.readings.values()]
    facts.append(f"load average at readings {_range(loads, '.1f') or '?'}")
    return lines + ["Host: " + "; ".join(facts) + ". Each NUMA node's memory online and free at the start: "
                    "the topology (memories).", ""]


def _case_rows(run: Run, cond: recorded.Conditions, model: PeakModel | None) -> tuple[list[list[str]], list[list[str]]]:
    """(slow, seen): the paths below EXPECTED_SHARE of their peak with their causes (or
    NOTHING), and the other cases whose window fired a rule, whose figures are not below
    what a healthy node gives (or have no peak to say so): shown, not blamed."""
    slow, seen = [], []
    for family in FAMILIES:
        table = run.tables.get(f"{family}/cases")
        if table is None or table.empty or "case_id" not in table:
            continue
        paths = standing(family, table)
        for row in table.to_dict("records"):
            found = causes.case_causes(cond, int(row["case_id"]), family)
            if found is None:
                continue
            share = share_of_peak(family, row, model) if int(row["case_id"]) in paths else math.nan
            below = math.isfinite(share) and share < causes.EXPECTED_SHARE
            if not found and not below:
                continue
            value, unit = _figure(row)
            figure = f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.2f} {unit}" if math.isfinite(value) \
                else str(row.get("status", ""))
            (slow if below else seen).append([case_text(family, row), str(row["case_id"]), figure,
                                              f"{share * 100:.0f} %" if math.isfinite(share) else "",
                                              causes.words(found)])
    return slow, seen


@item("conditions", "", "Conditions and causes", "section",
      ("conditions/windows", "conditions/readings", "conditions/cpus", "conditions/gpus"), "", order=7)
def _section(ctx: Context) -> Part:
    part = Part()
    for run in ctx.runs.runs:
        cond = recorded.of_tables(run.attrs, run.tables, run.topology)
        if cond is None:
            continue
        spent, span = cond.overhead()
        share = f" ({spent / span * 100:.2f} % of the {span:.1f} s they span)" if span > 0 else ""
        part.lines += [f"### {text(run.name)} on {code(run.node)}", "",
                       f"NVML: {text(cond.nvml)}. {len(cond.readings)} readings between cases took "
                       f"{spent * 1e3:.1f} ms{share}.", ""]
        part.lines += _gpu_lines(cond) + _host_lines(run.attrs, cond) + _drains(cond)
        slow, seen = _case_rows(run, cond, ctx.models.get(run.node))
        share = f"{causes.EXPECTED_SHARE:.0%}"
        if slow:
            part.lines += [f"Paths below {share} of their theoretical peak, and what their conditions show "
                           "(analysis/model/causes.py):", ""]
            part.lines += markdown(["case", "case_id", "figure", "of peak", "cause"], slow, right={1, 2, 3})
        else:
            part.lines += [f"No path below {share} of its theoretical peak.", ""]
        if seen:
            part.lines += ["Other cases whose conditions fired a rule (their figures are not below what a healthy "
                           "node gives, or have no peak to say so: shown, not blamed):", ""]
            part.lines += markdown(["case", "case_id", "figure", "of peak", "condition"], seen, right={1, 2, 3})
        for host, other in recorded.machines(run.attrs).items():  # a job's other machines
            part.lines += [f"#### {text(run.name)}: the job's machine {code(host)}", "",
                           f"NVML: {text(other.nvml)}. {len(other.readings)} readings.", ""]
            part.lines += _gpu_lines(other) + _host_lines({}, other) + _drains(other)
    return part


def _drains(cond: recorded.Conditions) -> list[str]:
    drains = causes.node_conditions(cond)
    if not drains:
        return []
    return ["Conditions that take the node out on their own (`analysis fleet` drains it):", ""] + \
        [f"- {text(c.text)}" for c in drains] + [""]
