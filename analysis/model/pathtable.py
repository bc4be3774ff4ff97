"""The node's path table: every path a GPU has to memory, measured GB/s, % of peak, comment.

Rows per GPU (docs/analysis.md, "Path table"):

- ``hbm-read``/``hbm-write``: the GPU's kernel reading/writing its own memory (/bw, the
  path matrix's entry of ``gpuN`` or its HBM NUMA node, whichever is higher);
- ``host-read``/``host-write``: its kernel reading/writing a host node's memory (/bw);
- ``h2d``/``d2h``/``bidir``: copy-engine transfers with each host node (/memcpy, best
  allocator at the largest size, analysis.results.transfers.best); bidir is the sum of both;
- ``peer-read``/``peer-write``: its kernel on another GPU's memory (/bw);
- ``gpu-copy``: a /bw copy between two GPUs' memories, as a transfer rate (size / time,
  half the copy's read + written GB/s).

Host nodes are ``local host`` (the GPU's nearest host node, topology ``host_numa``) or
``remote host``. The comment is derived from the numbers: the share of the limiting link
or memory, and ratios to the related row (remote vs local, d2h vs h2d, bidir per
direction vs one-way).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..results import transfers
from ..results.cases import best as best_case
from ..results.cases import memory_aliases
from .peaks import Capacity, Peak, PeakModel, pct_text
from .vocabulary import HBM, LPDDR5X, on_gpu

COLUMNS = ["host", "gpu", "kind", "role", "memory", "path", "how", "alloc", "size_bytes",
           "GBps", "peak_GBps", "pct_of_peak", "peak_limit", "peak_assumed", "h2d_GBps", "d2h_GBps",
           "h2d_oneway_GBps", "d2h_oneway_GBps", "comment"]
KIND_ORDER = ("hbm-read", "hbm-write", "host-read", "host-write", "h2d", "d2h", "bidir",
              "peer-read", "peer-write", "gpu-copy", "d2d", "d2d-bidir")
GPU_GPU = ("peer-read", "peer-write", "gpu-copy", "d2d", "d2d-bidir")
ENGINES = {"ce": "peer copy engine", "sm": "peer SM copy", "staged": "staged through host"}
LIMITED = 85.0  # % of peak from which a path is called limited by its slowest part


@dataclass(frozen=True)
class Node:
    """What the path table needs of a topology."""

    gpus: dict[int, int]        # GPU -> its nearest host node (-1 unknown)
    host_nodes: list[int]       # NUMA nodes of kind host
    aliases: dict[str, str]     # HBM NUMA node -> gpuN

    @classmethod
    def of(cls, topology: Mapping[str, Any]) -> "Node":
        gpus = {int(p["gpu"]): int(p.get("host_numa") if p.get("host_numa") is not None else -1)
                for p in topology.get("processors", []) if p.get("kind") == "gpu"}
        hosts = [int(m["numa"]) for m in topology.get("memories", []) if m.get("kind") == "host"]
        return cls(gpus, hosts, memory_aliases(topology))

    def role(self, gpu: int, memory: str) -> str:
        memory = self.aliases.get(memory, memory)
        if memory == f"gpu{gpu}":
            return "HBM"
        if memory.startswith("gpu"):
            return f"GPU {memory[3:]}"
        return "local host" if memory == f"numa{self.gpus.get(gpu, -1)}" else "remote host"


def limit_text(limit: str | None, model: PeakModel) -> str:
    """'link:pcie:gpu0' -> 'PCIe gen5 x16'; 'numa0' -> 'numa0 memory (LPDDR5X)'."""
    if not limit:
        return "?"
    if limit.startswith("link:"):
        parts = limit.split(":")
        if parts[1] == "pcie":
            gpu = int(parts[2][3:]) if len(parts) > 2 else None
            link = (model.gpus.get(gpu) or {}).get("link") or {}
            if link.get("gen") and link.get("width"):
                return f"PCIe gen{link['gen']} x{link['width']}"
            return "the PCIe link"
        return {"c2c": "the NVLink-C2C link", "nvlink": "NVLink",
                "interconnect": "the socket interconnect"}.get(parts[1], limit)
    entry = model.memories.get(limit, {})
    if on_gpu(entry.get("kind")):
        return f"gpu{entry.get('gpu')} {HBM}"
    return f"{limit} memory" + (f" ({LPDDR5X})" if model.grace else "")


def bidir_peak(model: PeakModel, pu: str, mem: str, via: str | None) -> Peak:
    """Both directions at once: twice the slowest link (links are full duplex), bounded by
    the host memory, which serves the reads of one direction and the writes of the other."""
    parts = model.capacities(pu, mem, via)
    links = [c for c in parts[:-1] if c.gbps is not None]
    memory = parts[-1]
    unknown = tuple(c.name for c in parts if c.gbps is None)
    candidates: list[tuple[float, Capacity]] = []
    if links:
        link = min(links, key=lambda c: c.gbps or 0.0)
        candidates.append((2 * (link.gbps or 0.0), link))
    if memory.gbps is not None:
        candidates.append((memory.gbps, memory))
    if not candidates:
        return Peak(None, None, None, unknown)
    gbps, part = min(candidates, key=lambda c: c[0])
    return Peak.of(part, unknown, gbps)


def _row(host: str, gpu: int, kind: str, node: Node, memory: str, path: str, how: str,
         gbps: float, peak: Peak, **extra: Any) -> dict[str, Any]:
    pct = 100 * gbps / peak.gbps if peak.gbps else np.nan
    return {"host": host, "gpu": gpu, "kind": kind, "role": node.role(gpu, memory),
            "memory": node.aliases.get(memory, memory), "path": path, "how": how,
            "GBps": float(gbps), "peak_GBps": peak.gbps, "pct_of_peak": pct,
            "peak_limit": peak.limit or "", "peak_assumed": peak.assumed, **extra}


def _is_gpu(names: pd.Series) -> pd.Series:
    return pd.Series([str(n).startswith("gpu") for n in names], index=names.index, dtype=bool)


def _bw_rows(host: str, node: Node, entries: pd.DataFrame) -> list[dict[str, Any]]:
    """Kernel reads and writes by the GPUs (path matrix entries that ran)."""
    ok = entries[(entries["host"] == host) & (entries["status"] == "ok")
                 & _is_gpu(entries["pu"])]
    ok = ok.assign(canon=[node.aliases.get(m, m) for m in ok["mem"]])
    rows = []
    for (pu, op, mem), group in ok.groupby(["pu", "op", "canon"], sort=False):
        gpu = int(pu[3:])
        if gpu not in node.gpus or not (mem.startswith("gpu") or mem.startswith("numa")):
            continue
        top = group.loc[group["median_GBps"].astype(float).idxmax()]
        role = node.role(gpu, mem)
        kind = {"HBM": "hbm", "local host": "host", "remote host": "host"}.get(role, "peer")
        verb = "reads" if op == "read" else "writes"
        where = "its HBM" if role == "HBM" else f"{mem} ({role})" if "host" in role \
            else f"{mem} memory"
        peak = Peak(None if pd.isna(top["peak_GBps"]) else float(top["peak_GBps"]),
                    top["peak_source"], top["peak_limit"] or None, citation=top["peak_citation"] or None)
        rows.append(_row(host, gpu, f"{kind}-{op}", node, mem, f"{pu} {verb} {where}",
                         f"kernel ({top['kernel']}, {top['alloc']}), /bw",
                         float(top["median_GBps"]), peak, alloc=top["alloc"],
                         size_bytes=top["size_bytes"]))
    return rows


def _copy_rows(host: str, node: Node, bw_cases: pd.DataFrame,
               model: PeakModel) -> list[dict[str, Any]]:
    """GPU-to-GPU copies of /bw, as transfer rates."""
    copies = bw_cases[(bw_cases["host"] == host) & (bw_cases["op"] == "copy")
                      & (bw_cases["pu_kind"] == "gpu")]
    copies = copies.assign(src=[node.aliases.get(m, m) for m in copies["mem"]],
                           dst=[node.aliases.get(m, m) for m in copies["dst_mem"].fillna("")])
    copies = copies[_is_gpu(copies["src"]) & _is_gpu(copies["dst"])
                    & (copies["src"] != copies["dst"])]
    rows = []
    for _, top in best_case(copies, ["pu", "src", "dst"]).iterrows():
        gpu = int(top["pu"][3:])
        other = top["dst"] if top["src"] == top["pu"] else top["src"]
        # The case's `via` is its source's; the GPU-to-GPU leg is pu -> other.
        peak = model.path(top["pu"], other)
        rows.append(_row(host, gpu, "gpu-copy", node, other,
                         f"{top['src']} → {top['dst']} (copy kernel on {top['pu']})",
                         "copy kernel, /bw (size / time)", float(top["median_GBps"]) / 2,
                         peak, alloc=top["alloc"], size_bytes=top["size_bytes"]))
    return rows


def _memcpy_rows(host: str, node: Node, cases: pd.DataFrame,
                 model: PeakModel) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]]]:
    rows, missing = [], []
    arrows = {"h2d": "{m} → gpu{g}", "d2h": "gpu{g} → {m}", "bidir": "{m} ⇄ gpu{g}"}
    for gpu, local in node.gpus.items():
        for numa in sorted(node.host_nodes, key=lambda n: (n != local, n)):
            mem = f"numa{numa}"
            for direction in transfers.DIRECTIONS:
                path = arrows[direction].format(m=f"{mem} ({node.role(gpu, mem)})", g=gpu)
                case = transfers.best(cases, host, gpu, numa, direction)
                if case is None:
                    why = transfers.unmeasured_reason(cases, host, gpu, numa, direction)
                    if why or numa == local:
                        missing.append((gpu, path + " (copy engine)", why or "not run"))
                    continue
                via = str(case["via"]) or None
                peak = bidir_peak(model, f"gpu{gpu}", mem, via) if direction == "bidir" \
                    else model.path(f"gpu{gpu}", mem, via)
                how = (f"copy engine, {transfers.size_label(case['size_bytes'])}, "
                       f"{case['alloc']}, /memcpy")
                # bidir's directions against one-way copies of the same size and allocator
                oneway = {f"{d}_oneway_GBps": transfers.median_at(
                    cases, host, gpu, numa, d, int(case["size_bytes"]), str(case["alloc"]))
                    for d in ("h2d", "d2h")} if direction == "bidir" else {}
                rows.append(_row(host, gpu, direction, node, mem, path, how,
                                 float(case["median_GBps"]), peak, alloc=case["alloc"],
                                 size_bytes=case["size_bytes"],
                                 h2d_GBps=case["h2d_median_GBps"],
                                 d2h_GBps=case["d2h_median_GBps"], **oneway))
    return rows, missing


def _d2d_peak(model: PeakModel, top: pd.Series, src: int, dst: int) -> Peak:
    """Peer copies: the GPUs' link (the case's via, else the topology's); staged copies:
    the slower of the two GPUs' paths to the staging node."""
    if top["engine"] != "staged":
        via = str(top["via"]) if str(top["via"]) in ("nvlink", "peer") else None
        return model.path(f"gpu{dst}", f"gpu{src}", via)
    # via of a staged way: "LINK>numaN>LINK" (source's D2H link, staging node, the
    # destination's H2D link); several ways comma-separated: the first is this one.
    route = str(top["via"]).split(",")[0].split(">")
    numa = int(top["host_numa"])
    if len(route) == 3 and route[1].startswith("numa"):
        legs = [(src, route[1], route[0] or None), (dst, route[1], route[2] or None)]
    elif numa >= 0:
        legs = [(src, f"numa{numa}", None), (dst, f"numa{numa}", None)]
    else:
        return Peak(None, None, None, ("staging node",))
    peaks = [model.path(f"gpu{g}", mem, via) for g, mem, via in legs]
    known = [p for p in peaks if p.gbps is not None]
    return min(known, key=lambda p: p.gbps or 0.0) if known else peaks[0]


def _d2d_missing(host: str, cases: pd.DataFrame) -> list[tuple[int, str, str]]:
    """GPU<->GPU (pair, direction, engine) without a measured case, with the reasons."""
    if cases.empty:
        return []
    mine = cases[(cases["host"] == host) & cases["direction"].isin(transfers.D2D)]
    ran = transfers.bandwidth(mine)
    done = set(zip(ran["gpus"], ran["direction"], ran["engine"])) if not ran.empty else set()
    missing = []
    for (gpus, direction, engine), group in mine.groupby(["gpus", "direction", "engine"],
                                                         sort=False):
        if (gpus, direction, engine) in done:
            continue
        src, dst = transfers.pair(group.iloc[0])
        label = f"{transfers.gpu_label(group.iloc[0])} ({ENGINES.get(engine, engine)})"
        why = "; ".join(dict.fromkeys(r for r in group["reason"].fillna("") if r))
        missing.append((dst if direction == "d2d" and dst >= 0 else src, label,
                        why or "not measured"))
    return missing


def _d2d_rows(host: str, node: Node, cases: pd.DataFrame,
              model: PeakModel) -> list[dict[str, Any]]:
    """GPU<->GPU copies of /memcpy (direction d2d, d2d-bidir): per pair, direction and
    engine the best allocator at the largest size; a d2d row belongs to the destination
    GPU (the one receiving the data), a d2d-bidir row to the first GPU of the pair."""
    ran = transfers.bandwidth(cases)
    if ran.empty:
        return []
    ran = ran[(ran["host"] == host) & ran["direction"].isin(transfers.D2D)]
    rows = []
    for _, group in ran.groupby(["gpus", "direction", "engine", "host_numa"], sort=False):
        top = transfers.at_largest(group)
        top = top.loc[top["median_GBps"].astype(float).idxmax()]
        src, dst = transfers.pair(top)
        if dst < 0:
            continue
        owner, other = (dst, src) if top["direction"] == "d2d" else (src, dst)
        how = ENGINES.get(str(top["engine"]), str(top["engine"]))
        if top["engine"] == "staged" and int(top["host_numa"]) >= 0:
            how += f" numa{int(top['host_numa'])}"
        peak = _d2d_peak(model, top, src, dst)
        if top["direction"] == "d2d-bidir" and peak.gbps:
            peak = replace(peak, gbps=2 * peak.gbps)
        rows.append(_row(host, owner, str(top["direction"]), node, f"gpu{other}",
                         transfers.gpu_label(top),
                         f"{how}, {transfers.size_label(top['size_bytes'])}, /memcpy",
                         float(top["median_GBps"]), peak, alloc=top["alloc"],
                         size_bytes=top["size_bytes"], h2d_GBps=np.nan, d2h_GBps=np.nan))
    return rows


def _find(rows: pd.DataFrame, gpu: int, kind: str, memory: str | None = None,
          role: str | None = None) -> float | None:
    hit = rows[(rows["gpu"] == gpu) & (rows["kind"] == kind)]
    if memory is not None:
        hit = hit[hit["memory"] == memory]
    if role is not None:
        hit = hit[hit["role"] == role]
    return float(hit["GBps"].max()) if not hit.empty else None


def oneway(row: pd.Series, rows: pd.DataFrame, part: str) -> float | None:
    """The one-way rate a bidir row's ``part`` compares with: the same size and allocator
    where measured, else the path table's one-way row of that memory."""
    same = row.get(f"{part}_oneway_GBps")
    if same is not None and pd.notna(same):
        return float(same)
    return _find(rows, int(row["gpu"]), part, str(row["memory"]))


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def comment(row: pd.Series, rows: pd.DataFrame, model: PeakModel) -> str:
    """One line from the numbers: share of the limiting part, then ratios to related rows."""
    what = limit_text(row["peak_limit"], model)
    if row["kind"] == "bidir" and str(row["peak_limit"]).startswith("link:"):
        what = f"both directions of {what}"
    pct = "" if pd.isna(row["pct_of_peak"]) else pct_text(row["pct_of_peak"], bool(row["peak_assumed"]))
    assumed = ", assumed" if row["peak_assumed"] else ""
    if pd.isna(row["pct_of_peak"]):
        text = "no theoretical peak known for this path"
    elif row["pct_of_peak"] >= LIMITED:
        text = f"limited by {what}: {pct} of its {row['peak_GBps']:.0f} GB/s{assumed}"
    else:
        text = f"{pct} of {what} ({row['peak_GBps']:.0f} GB/s{assumed})"
    gpu, kind, gbps = row["gpu"], row["kind"], row["GBps"]
    notes = []
    if row["role"] == "remote host":
        local = _find(rows, gpu, kind, role="local host")
        if local:
            notes.append(f"{_pct(gbps / local)} of the local host's {local:.1f} GB/s")
    if kind == "d2h":
        h2d = _find(rows, gpu, "h2d", row["memory"])
        if h2d:
            notes.append(f"{_pct(gbps / h2d)} of h2d")
    if kind == "bidir":
        for part in ("h2d", "d2h"):
            one_way, value = oneway(row, rows, part), row[f"{part}_GBps"]
            if one_way and pd.notna(value):
                notes.append(f"{part} {value:.1f} GB/s = {_pct(value / one_way)} of one-way")
    if kind in GPU_GPU:
        host = _find(rows, gpu, "h2d")
        if host:
            notes.append(f"{gbps / host:.1f}x the best host → GPU copy")
    return "; ".join([text, *notes])


def build(host: str, topology: Mapping[str, Any], model: PeakModel, entries: pd.DataFrame,
          bw_cases: pd.DataFrame, memcpy: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                 list[tuple[int, str, str]]]:
    """Path rows of one host (columns COLUMNS) and the (gpu, path, reason) not measured."""
    node = Node.of(topology)
    rows = _bw_rows(host, node, entries) + _copy_rows(host, node, bw_cases, model)
    transfer_rows, missing = _memcpy_rows(host, node, memcpy, model)
    transfer_rows += _d2d_rows(host, node, memcpy, model)
    missing += _d2d_missing(host, memcpy)
    table = pd.DataFrame(rows + transfer_rows).reindex(columns=COLUMNS)
    if table.empty:
        return table, missing
    table = table.assign(order=[KIND_ORDER.index(k) for k in table["kind"]],
                         remote=[r == "remote host" for r in table["role"]])
    table = table.sort_values(["gpu", "order", "remote", "memory"], kind="stable")
    table = table.drop(columns=["order", "remote"]).reset_index(drop=True)
    table["comment"] = [comment(row, table, model) for _, row in table.iterrows()]
    for (gpu, role) in [(g, "HBM") for g in node.gpus]:
        if table[(table["gpu"] == gpu) & (table["role"] == role)].empty:
            missing.insert(0, (gpu, f"gpu{gpu} reads its HBM (kernel)", "no GPU read in /bw"))
    return table, missing
