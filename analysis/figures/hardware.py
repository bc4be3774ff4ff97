"""Table I: the GPUs of the runs (SMs, memory, L2, clocks, from each run's topology and
clock attributes) beside the GPUs of the paper's Table I (GH200 with HBM3 or HBM3e, H100
SXM, H100 PCIe) and the Hopper facts its text prints beside it."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .. import outfiles
from ..render.tables import markdown, num
from ..render.items import Comparison, Context, Drawn, item
from ..results.families import FAMILIES
from .published import DEF_TABLE1, Published, hold, of, run_facts

#: The paper's Table I columns: key in published.py -> header.
PAPER_GPUS = {"gh200_hbm3": "paper: GH200, 96 GB HBM3", "gh200_hbm3e": "paper: GH200, 144 GB HBM3e",
              "h100_sxm": "paper: H100 SXM", "h100_pcie": "paper: H100 PCIe"}
MEMORY_TYPES = {"gh200_hbm3": "HBM3", "gh200_hbm3e": "HBM3e", "h100_sxm": "HBM3", "h100_pcie": "HBM2e"}
ROWS = ("model", "SMs", "memory type", "memory size", "memory bandwidth", "L2 cache", "L1 cache per SM",
        "concurrent threads", "SM clock (max)", "memory clock (max)")
#: Any run carries the topology and the GPU clocks: every family's cases table (families.def).
ANY_TABLE = tuple(f"{name}/cases" for name in FAMILIES)


def paper_column(model: str, memory_bytes: float) -> str:
    """The Table I column of the paper a GPU is (by its model name), '' for none: an H200
    or an H100 NVL is not in the table."""
    m = model.upper()
    if "GH200" in m:
        return "gh200_hbm3e" if "144G" in m or "HBM3E" in m or memory_bytes > 120e9 else "gh200_hbm3"
    if "H100" in m and "PCIE" in m:
        return "h100_pcie"
    if "H100" in m and "NVL" not in m:
        return "h100_sxm"
    return ""


def _published(column: str) -> dict[str, Published]:
    return {p.key.split(".")[-1]: p for p in of(f"table1.{column}.")}


def _clocks(attrs: Mapping[str, Any]) -> dict[int, tuple[float, float]]:
    """GPU number -> (SM, memory) clock in MHz from the root attribute gpu_clocks."""
    try:
        rows = json.loads(attrs.get("gpu_clocks") or "[]")
    except (TypeError, json.JSONDecodeError):
        return {}
    return {int(r["gpu"]): (r.get("sm_clock_khz", float("nan")) / 1e3, r.get("mem_clock_khz", float("nan")) / 1e3)
            for r in rows if isinstance(r, dict) and "gpu" in r}


def _gpu_l1(ctx: Context, host: str, names: list[str]) -> float:
    """A GPU's L1 per SM in bytes from /chase/caches (mempath's table by compute capability)."""
    caches = ctx.table("chase/caches")
    if caches.empty or "level" not in caches:
        return float("nan")
    l1 = caches[(caches["host"] == host) & caches["pu"].isin(names) & (caches["level"] == "L1")]
    return float(l1["bytes"].max()) if not l1.empty else float("nan")


def _run_columns(ctx: Context) -> tuple[dict[str, dict[str, str]], list[Comparison], list[str]]:
    columns: dict[str, dict[str, str]] = {}
    comparisons: list[Comparison] = []
    notes: list[str] = []
    several_hosts = len(ctx.topologies) > 1
    for host, topology in ctx.topologies.items():
        runs = [r for r in ctx.runs.runs if r.node == host]
        clocks: dict[int, tuple[float, float]] = {}
        for run in runs:
            clocks.update(_clocks(run.attrs))
        gpus = [p for p in topology.get("processors", []) if p.get("kind") == "gpu"]
        for model in dict.fromkeys(str(g.get("model", "GPU")) for g in gpus):
            same = [g for g in gpus if str(g.get("model", "GPU")) == model]
            names = [g["name"] for g in same]
            sms = max(int(g.get("sm_count") or 0) for g in same)
            memory = max(float(g.get("memory_bytes") or 0) for g in same)
            l2 = max(float(g.get("l2_bytes") or 0) for g in same)
            sm_mhz = max((clocks.get(int(g["gpu"]), (float("nan"),) * 2)[0] for g in same), default=float("nan"))
            mem_mhz = max((clocks.get(int(g["gpu"]), (float("nan"),) * 2)[1] for g in same), default=float("nan"))
            l1 = _gpu_l1(ctx, host, names)
            which = f"{names[0]}-{names[-1]}" if len(names) > 1 else names[0]
            header = f"this run: {which}" + (f" ({host})" if several_hosts else "")
            columns[header] = {
                "model": model, "SMs": str(sms) if sms else "", "memory type": "not recorded",
                "memory size": f"{num(memory / 2**30, 1)} GiB" if memory else "",
                "memory bandwidth": "not recorded (`mempath bw` measures it)",
                "L2 cache": f"{num(l2 / 1e6, 1)} MB ({num(l2 / 2**20, 0)} MiB)" if l2 else "",
                "L1 cache per SM": (f"{num(l1 / 1024, 0)} KiB (mempath's table by compute capability)"
                                    if l1 == l1 else "not recorded"),
                "concurrent threads": "not recorded",
                "SM clock (max)": f"{num(sm_mhz, 0)} MHz" if sm_mhz == sm_mhz else "not recorded",
                "memory clock (max)": f"{num(mem_mhz, 0)} MHz" if mem_mhz == mem_mhz else "not recorded"}
            column = paper_column(model, memory)
            if not column:
                notes.append(f"{which} ({model}) is none of the paper's Table I GPUs: shown, not compared.")
                continue
            published = _published(column)
            label = PAPER_GPUS[column].removeprefix("paper: ")
            held = [("sms", float(sms), "SMs"), ("memory", memory / 2**30, "GB")]
            if "l2" in published:
                held.append(("l2", l2 / 1e6, "MB"))
            for key, run_value, unit in held:
                p = published.get(key)
                if p is None or not run_value:
                    continue
                comparisons.append(hold(
                    "gpu_characteristics", p, run_value, f"{which} ({model}) against {label}: "
                    f"{p.quantity.split(': ', 1)[-1]}" + (" (this run in GiB)" if key == "memory" else ""),
                    run_facts(topology, names[0], definition=DEF_TABLE1)))
    return columns, comparisons, notes


def _paper_columns() -> dict[str, dict[str, str]]:
    columns = {}
    for column, header in PAPER_GPUS.items():
        p = _published(column)
        cells = {row: "" for row in ROWS}
        cells.update({"model": header.removeprefix("paper: "), "SMs": f"{p['sms'].value:.0f}",
                      "memory type": MEMORY_TYPES[column], "memory size": f"{p['memory'].value:g} GB",
                      "memory bandwidth": f"{p['bandwidth'].value:g} TB/s"})
        if "l2" in p:
            cells["L2 cache"] = f"{p['l2'].value:g} MB"
        if "l1_per_sm" in p:
            cells["L1 cache per SM"] = f"{p['l1_per_sm'].value:g} KB"
        if "threads" in p:
            cells["concurrent threads"] = f"{p['threads'].value:,.0f} ({p['threads_per_sm'].value:,.0f} per SM)"
        columns[header] = cells
    return columns


@item("gpu_characteristics", "Table I", "GPU characteristics: this run's GPUs beside the paper's", "table",
      ANY_TABLE, "mempath topo (any run carries the topology and the GPU clocks)", order=2.5)
def gpu_characteristics(ctx: Context) -> Drawn:
    runs, comparisons, notes = _run_columns(ctx)
    if not runs:
        return Drawn(why_not="the runs' topologies list no GPU; measured by `mempath topo` on a GPU node")
    frame = pd.DataFrame({"": list(ROWS), **{h: [c.get(r, "") for r in ROWS] for h, c in
                                             {**runs, **_paper_columns()}.items()}}, dtype=object)
    csv = ctx.out / "gpu_characteristics.csv"
    outfiles.write_csv(frame, csv)
    notes = ["This run's columns: the topology (SMs, memory, L2 from the CUDA runtime) and the root "
             "attribute gpu_clocks (the maximum clocks the runtime reports); the paper's: Table I (SMs, "
             "memory type, size, bandwidth) and, for the GH200 it measured, the text beside it "
             "(sec. II-A3: L1, L2, threads).",
             "Memory sizes: the GPU reports binary gigabytes less what the driver reserves (an \"80 GB\" "
             "H100 has 79.2 GiB), so the run's GiB is held against the paper's GB; L2 in decimal MB "
             "(the paper's 52 MB is the 50 MiB the runtime reports).",
             "The paper prints no GPU clock; the run's are shown for the record."] + notes
    return Drawn(files=[csv], table=markdown(frame), notes=notes, comparisons=comparisons,
                 runs=[r.name for r in ctx.runs.runs])
