"""How fast a GPU read each memory in a set of result files: the one rule that gives an LLM
decode its bandwidth bound where Fig. 17 and the node report take it from the set's own
bandwidth files (`mempath llm` measures its own, in the same run)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .cases import memory_aliases
from .io import RunSet

#: (memory, allocator, GB/s, the case in words)
Read = tuple[str, str, float, str]


def gpu_reads(tables: Mapping[str, pd.DataFrame], topology: Mapping[str, Any], gpu: int) -> list[Read]:
    """Every ok way gpu``gpu`` read a memory: bw reads by its kernels first, then memcpy
    copies into it (h2d from a host node, d2d from a peer) where no kernel read that memory.
    Memory names as in the topology's memories (GH200's HBM NUMA node is its gpuN)."""
    aliases = memory_aliases(topology)
    rows: list[Read] = []
    bw = tables.get("bw/cases")
    if bw is not None and not bw.empty:
        ok = bw[(bw["op"] == "read") & (bw["pu"] == f"gpu{gpu}") & (bw["status"] == "ok")]
        rows += [(aliases.get(r.mem, r.mem), r.alloc, float(r.median_GBps),
                  f"bw read {r.mem} {r.alloc} kernel={r.kernel} size={r.size_bytes}") for r in ok.itertuples()]
    copies = tables.get("memcpy/cases")
    if copies is not None and not copies.empty:
        ok = copies[(copies["status"] == "ok") & (copies["mode"] == "bandwidth") & (copies["all_gpus"] == 0)]
        h2d = ok[(ok["direction"] == "h2d") & (ok["gpu"] == gpu)]
        rows += [(f"numa{r.host_numa}", r.alloc, float(r.median_GBps),
                  f"memcpy h2d numa{r.host_numa} {r.alloc} engine={r.engine} size={r.size_bytes}")
                 for r in h2d.itertuples()]
        d2d = ok[(ok["direction"] == "d2d") & (ok["dst_gpu"] == gpu) & ok["engine"].isin(["ce", "sm"])]
        rows += [(f"gpu{r.gpu}", "device", float(r.median_GBps), f"memcpy d2d gpu{r.gpu} engine={r.engine}")
                 for r in d2d.itertuples()]
    return rows


def read_path(reads: list[Read], alloc: str, mem: str) -> Read | None:
    """The read that stands for the GPU reading ``mem``: kernel reads before copies, the
    weights' allocator before others, then the highest median; None where none read it."""
    kernel = [r for r in reads if r[0] == mem and r[3].startswith("bw ")]
    mine = kernel or [r for r in reads if r[0] == mem]
    if not mine:
        return None
    return max([r for r in mine if r[1] == alloc] or mine, key=lambda r: r[2])


def step_bytes(case: Any) -> float:
    """Bytes a decode step reads (an llm/cases row): the weights it reads (an untied
    embedding table not counted: a step reads one row of it) and the KV cache slots, where
    the file says (since issue 39); every weight byte in older files."""
    read = float(getattr(case, "weight_read_bytes", -1) or -1)
    kv = float(getattr(case, "kv_read_bytes", -1) or -1)
    if math.isfinite(read) and read > 0:
        return read + (kv if math.isfinite(kv) and kv > 0 else 0.0)
    return float(case.weight_bytes)


def llm_bounds(runs: RunSet, cases: pd.DataFrame, mem_column: str) -> pd.DataFrame:
    """``cases`` (llm/cases rows) with path_GBps, bound_tokens_per_s and bound_from: the
    decoding GPU's read of the memory in ``mem_column`` in the same set of files (read_path),
    batch x that GB/s / the bytes a step reads (step_bytes); NaN and '' where the set holds
    no such read."""
    topologies = {run.node: run.topology for run in runs.runs}
    reads: dict[tuple[str, int], list[Read]] = {}
    gbps, bounds, sources = [], [], []
    for r in cases.itertuples():
        key = (r.host, int(r.gpu))
        if key not in reads:
            tables = {name: runs.tables[name][runs.tables[name]["host"] == r.host]
                      for name in ("bw/cases", "memcpy/cases") if name in runs.tables}
            reads[key] = gpu_reads(tables, topologies.get(r.host, {}), int(r.gpu))
        aliases = memory_aliases(topologies.get(r.host, {}))
        mem = str(getattr(r, mem_column))
        read = read_path(reads[key], r.weight_alloc, aliases.get(mem, mem))
        gbps.append(read[2] if read else math.nan)
        bounds.append(read[2] * 1e9 / step_bytes(r) * float(r.batch) if read else math.nan)
        sources.append(read[3] if read else "")
    return cases.assign(path_GBps=gbps, bound_tokens_per_s=bounds, bound_from=sources)
