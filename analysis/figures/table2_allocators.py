"""The paper's Table II: what each allocator is (its API), what the paper prints for it
(placement, automatic migration, GPU translation, page size: ``PAPER_TABLE_II``, the one
copy), and what these runs measured: where each buffer's pages were after its case, which
processors reached them; this node's translation and page size are table2_translation.py's."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import pandas as pd

from .. import outfiles
from ..model.roles import role
from ..model.vocabulary import MEMORY_WORDS, kind_name
from ..render.items import Context, Drawn, item
from ..render.tables import markdown
from ..results.cases import is_split, one_memory, placement_text, same_memory
from ..results.kinds import ALLOC_ORDER, ALLOCATORS
from . import table2_translation as translation
from .paths import run_gpu

ALLOC_COMMAND = "mempath bw --all; mempath allocmatrix --mem all; mempath um"

# How mempath calls each allocator's API (kinds.def's api column; src/core/allocators.cpp):
# a buffer's placement depends on which thread touched or pinned it.
_CALLED = {
    "system": " (malloc), first touch by a thread of the asked node",
    "numa": "(node)",
    "pinned": ", from a thread bound to the node",
    "managed": ", first touch (no prefetch)",
}
API = {name: row["api"].replace("+", " + ") + _CALLED.get(name, "") for name, row in ALLOCATORS.items()}


class PaperRow(NamedTuple):
    """One allocator's row as the paper's Table II prints it for its GH200."""
    placement: str
    migration: str
    translation: str
    page_size: str


# Table II's system-allocated row spans numa_alloc_onnode (one "Type" cell over both APIs);
# registered memory is not in it.
PAPER_TABLE_II: dict[str, PaperRow] = {
    "system": PaperRow("first touch", "yes (CUDA 12.4)", "ATS", "system"),
    "numa": PaperRow("specified", "no", "ATS", "system"),
    "pinned": PaperRow("DDR", "no", "ATS", "system"),
    "registered": PaperRow("not in Table II", "", "not in Table II", "not in Table II"),
    "managed": PaperRow("first touch", "yes", "ATS (DDR), GPU-MMU (HBM)", "system (DDR), 2 MB (HBM)"),
    "device": PaperRow("HBM", "no", "GPU-MMU", "2 MB"),
}
NOT_IN_PAPER = PaperRow("", "", "", "")


def placement_evidence(ctx: Context) -> pd.DataFrame:
    """One row per buffer whose pages were located after a case: host, allocator, the
    memory asked, the placement, the processor that touched it (``pu``: the case's, the
    GPU of a cudaMemcpy or of a um case), what it did (``bw read``, ``cudaMemcpy source``,
    ``um inplace``) and the run."""
    rows: list[dict[str, Any]] = []
    bw = ctx.table("bw/cases")
    if not bw.empty and "placement" in bw:
        for r in bw[bw["status"] == "ok"].to_dict("records"):
            touch = f"bw {r['op']}" + (" under noise" if ":" in str(r.get("noise") or "") else "")
            rows.append({"host": r["host"], "alloc": r["alloc"], "mem": r["mem"], "placement": r.get("placement"),
                         "pu": r["pu"], "by": touch, "run": r["run"]})
            if str(r.get("dst_mem") or ""):
                rows.append({"host": r["host"], "alloc": r.get("dst_alloc") or r["alloc"], "mem": r["dst_mem"],
                             "placement": r.get("dst_placement"), "pu": r["pu"], "by": touch, "run": r["run"]})
    am = ctx.table("allocmatrix/cases")
    if not am.empty and "placement" in am:
        gpus = {run: run_gpu(ctx, run, am) for run in set(am["run"])}
        for r in am[am["status"] == "ok"].to_dict("records"):
            for side, alloc, mem, at in (("source", r["src_alloc"], r["src_mem"], r.get("placement")),
                                         ("destination", r["dst_alloc"], r["dst_mem"], r.get("dst_placement"))):
                rows.append({"host": r["host"], "alloc": alloc, "mem": mem, "placement": at, "pu": gpus[r["run"]],
                             "by": f"cudaMemcpy {side}", "run": r["run"]})
    um = ctx.table("um/cases")
    if not um.empty and "alloc" in um:
        samples = ctx.table("um/samples")
        for r in um[um["status"] == "ok"].to_dict("records"):
            where = r.get("placement")
            # a case that names no one memory may have samples that do: the last one is after the case
            if one_memory(ctx.topologies.get(r["host"], {}), where) is None and not samples.empty \
                    and "placement" in samples:
                mine = samples[(samples["run"] == r["run"]) & (samples["case_id"] == r["case_id"])]
                found = [p for p in mine["placement"].fillna("") if str(p).strip()]
                where = found[-1] if found else where
            if placement_text(where):
                gpu = str(r.get("gpu", ""))
                gpu = gpu if gpu.startswith("gpu") else f"gpu{gpu}"
                # um names the host node of every case; a cudaMalloc buffer is the GPU's memory
                asked = gpu if r["alloc"] == "device" else r["mem"]
                rows.append({"host": r["host"], "alloc": r["alloc"], "mem": asked, "placement": where,
                             "pu": gpu, "by": f"um {r['experiment']}", "run": r["run"]})
    return pd.DataFrame(rows, columns=["host", "alloc", "mem", "placement", "pu", "by", "run"])


def _placement_text(ev: pd.DataFrame, topology: Mapping[str, Any]) -> str:
    """``as asked in 40 of 42; local LPDDR -> local HBM after a GPU's bw read (2)``: the
    memories by their role seen from the processor that touched them."""
    if ev.empty:
        return "not measured"
    kinds = {p["name"]: p.get("kind") for p in topology.get("processors", [])}
    stayed, moved, unknown = 0, {}, {}
    for r in ev.itertuples():
        where = one_memory(topology, r.placement)
        who = "a GPU's" if kinds.get(r.pu) == "gpu" else "a CPU's"
        asked = role(topology, r.pu, r.mem) or kind_name(topology, r.mem)
        if where is not None and same_memory(topology, where, r.mem):
            stayed += 1
        elif where is not None:
            key = f"{asked} -> {role(topology, r.pu, where) or kind_name(topology, where)} after {who} {r.by}"
            moved[key] = moved.get(key, 0) + 1
        else:
            key = f"{asked}: {'split' if is_split(placement_text(r.placement)) else 'unknown'} after {who} {r.by}"
            unknown[key] = unknown.get(key, 0) + 1
    parts = [f"as asked in {stayed} of {len(ev)}"]
    parts += [f"{k} ({n})" for k, n in sorted(moved.items(), key=lambda kv: -kv[1])[:4]]
    parts += [f"{k} ({n})" for k, n in sorted(unknown.items(), key=lambda kv: -kv[1])[:3]]
    if len(moved) > 4 or len(unknown) > 3:
        parts.append("more in allocation_apis_placements.csv")
    return "; ".join(parts)


def _access_text(bw: pd.DataFrame, topology: Mapping[str, Any], kind: str, alloc: str) -> str:
    """``yes: LPDDR, HBM (bw, 24 cases)``, ``no: REASON``, or what the node reports."""
    mine = bw[(bw["pu_kind"] == kind) & (bw["alloc"] == alloc)] if not bw.empty else bw
    ok = mine[mine["status"] == "ok"] if not mine.empty else mine
    if not ok.empty:
        names = {kind_name(topology, m) for m in ok["mem"]}
        kinds = [k for k in MEMORY_WORDS if any(n.startswith(k) for n in names)]
        return f"yes: {', '.join(kinds)} (bw, {len(ok)} cases ran)"
    if not mine.empty:
        reasons = [r for r in mine["reason"].fillna("") if r]
        return f"no: {reasons[0] if reasons else 'every case ' + '/'.join(sorted(set(mine['status'])))} (bw)"
    reported = [p for p in topology.get("paths", [])
                if next((q.get("kind") for q in topology.get("processors", []) if q.get("name") == p.get("pu")),
                        None) == kind]
    if not reported:
        return "no such processor"
    reach = any(alloc in p.get("allocs", []) for p in reported)
    return f"not measured (node reports: {'yes' if reach else 'no'})"


@item("allocation_apis", "Table II", "Allocators: API, where the pages were, which processors reached them",
      "table", ("bw/cases", "allocmatrix/cases", "um/cases"), ALLOC_COMMAND, order=4.5)
def allocation_apis(ctx: Context) -> Drawn:
    evidence = placement_evidence(ctx)
    bw = ctx.table("bw/cases")
    rows = []
    for host, topology in ctx.topologies.items():
        ev_host = evidence[evidence["host"] == host]
        bw_host = bw[bw["host"] == host] if not bw.empty and "host" in bw else pd.DataFrame()
        seen = set(ev_host["alloc"]) | (set(bw_host["alloc"]) if not bw_host.empty else set())
        for alloc in [a for a in ALLOC_ORDER if a in seen] + sorted(seen - set(ALLOC_ORDER)):
            paper = PAPER_TABLE_II.get(alloc, NOT_IN_PAPER)
            rows.append({"host": host, "allocator": alloc, "API": API.get(alloc, ""),
                         "placement (paper)": paper.placement, "migration (paper)": paper.migration,
                         "pages after first touch and access (measured)":
                             _placement_text(ev_host[ev_host["alloc"] == alloc], topology),
                         "CPU access (measured)": _access_text(bw_host, topology, "cpu", alloc),
                         "GPU access (measured)": _access_text(bw_host, topology, "gpu", alloc),
                         "GPU translation (paper)": paper.translation, "page size (paper)": paper.page_size,
                         **translation.columns(ctx, host, topology, alloc)})
    table = pd.DataFrame(rows, dtype=object)
    if table.empty:
        return Drawn(why_not="no case of /bw/cases, /allocmatrix/cases or /um/cases ran with an allocator; "
                             f"measured by `{ALLOC_COMMAND}`")
    if len(ctx.topologies) == 1:
        table = table.drop(columns="host")
    csv = ctx.out / "allocation_apis.csv"
    outfiles.write_csv(table, csv)
    outfiles.write_csv(evidence, ctx.out / "allocation_apis_placements.csv")
    used = set(evidence["run"]) | (set(bw["run"]) if not bw.empty and "run" in bw else set())
    notes = [
        "Documented: the API (docs/design.md's allocator table, src/core/allocators.cpp) and the paper's Table II "
        "placement and automatic migration. Measured in these runs: where each buffer's pages were after its "
        "case (the placement columns of /bw/cases, /allocmatrix/cases and /um: move_pages, CUDA range "
        "attributes), counted per buffer, and whether a CPU or GPU case with the allocator ran (/bw/cases); "
        "'node reports' is the topology's path table where no case measured it.",
        "allocation_apis_placements.csv lists every located buffer.",
        *translation.notes(),
    ]
    return Drawn(files=[csv, ctx.out / "allocation_apis_placements.csv"], table=markdown(table), notes=notes,
                 runs=[r.name for r in ctx.runs.runs if r.name in used])
