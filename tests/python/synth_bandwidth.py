"""Synthetic `mempath bw` and `mempath allocmatrix` files for the paper's Figs. 5, 7, 9, 10
and Table II: ``write(folder, topology)`` -> [bw.h5, allocmatrix.h5], root attribute
``synthetic`` = 1.

The values come from a plain model (MODEL below): a fraction of each path's theoretical
peak (analysis.model.peaks) by processor kind, path class and operation, scaled down by 1 %
per superchip so that statistics over processors can be told apart; copies as the
harmonic combination of the read and the write; CPU threads and GPU blocks saturating
linearly. The contention numbers follow the shape the paper describes (sec. III-C): peer
paths unaffected, local LPDDR split between both processors, HBM writes hit hardest. They
are a model for tests and the synthetic paper set, never measurements.

Tables and columns are those of the C++ writers (src/apps/bw_command.cpp: kCaseColumns,
kSampleColumns, with ``blocks`` and the ``noise_*`` columns of `--noise partner`;
src/apps/allocmatrix_command.cpp). ``noise_bandwidth=False`` writes a file from before the
noise columns (the noise reader's own bandwidth not recorded).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5fixtures import table, write_run

from analysis.model.peaks import PeakModel
from analysis.model.roles import role

SIZE = 1 << 30                 # bytes per buffer (1 GiB, above 4 x a Grace's 114 MiB L3)
ALLOCMATRIX_SIZE = 256 << 20   # mempath allocmatrix's default
NOISE_SIZE = 8 << 30           # the paper's 8 GB noise buffer
BLOCK_THREADS = 512            # threads per block of a GPU grid sweep (bw_plan.hpp)
BLOCKS_PER_SM = 4
REPS = 10

BW_CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "op": str, "pu": str, "pu_kind": str, "mem": str, "dst_mem": str,
    "alloc": str, "dst_alloc": str, "kernel": str, "threads": int, "size_bytes": int,
    "bytes": int, "noise": str, "via": str, "status": str, "reason": str, "reps": int,
    "passes": int, "median_GBps": float, "min_GBps": float, "max_GBps": float,
    "placement": str, "dst_placement": str, "placed": int, "verified": int,
    "cache_resident": int,
}
NOISE_CASE_COLUMNS: dict[str, type] = {
    "blocks": int, "noise_size_bytes": int, "noise_threads": int, "noise_bytes": int,
    "noise_seconds": float, "noise_GBps": float,
}
BW_SAMPLE_COLUMNS: dict[str, type] = {
    "case_id": int, "rep": int, "op": str, "pu": str, "pu_kind": str, "mem": str,
    "dst_mem": str, "alloc": str, "dst_alloc": str, "kernel": str, "threads": int,
    "size_bytes": int, "bytes": int, "time_s": float, "bandwidth_GBps": float, "noise": str,
}
ALLOC_CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "src_alloc": str, "src_mem": str, "dst_alloc": str, "dst_mem": str,
    "size_bytes": int, "status": str, "reason": str, "reps": int, "median_GBps": float,
    "min_GBps": float, "max_GBps": float, "placement": str, "dst_placement": str, "verified": int,
}
ALLOC_SAMPLE_COLUMNS: dict[str, type] = {
    "case_id": int, "rep": int, "src_alloc": str, "src_mem": str, "dst_alloc": str,
    "dst_mem": str, "size_bytes": int, "time_s": float, "bandwidth_GBps": float,
}
ALLOCATORS = ("system", "numa", "pinned", "registered", "managed", "device")

# Fraction of the path's peak by (processor kind, path class, op); the class is the
# topology's `via`. Hopper's C2C figures are the paper's (93 % / 84 %), Grace's to HBM too
# (53 % / 64 %); peer paths over C2C and NVLink stay below 60 %.
MODEL: dict[tuple[str, str, str], float] = {
    ("gpu", "local", "read"): 0.90, ("gpu", "local", "write"): 0.93,
    ("gpu", "c2c", "read"): 0.93, ("gpu", "c2c", "write"): 0.84,
    ("gpu", "nvlink", "read"): 0.80, ("gpu", "nvlink", "write"): 0.85,
    ("gpu", "nvlink+c2c", "read"): 0.55, ("gpu", "nvlink+c2c", "write"): 0.50,
    ("gpu", "pcie", "read"): 0.80, ("gpu", "pcie", "write"): 0.82,
    ("cpu", "local", "read"): 0.80, ("cpu", "local", "write"): 0.60,
    ("cpu", "c2c", "read"): 0.53, ("cpu", "c2c", "write"): 0.64,
    ("cpu", "interconnect", "read"): 0.85, ("cpu", "interconnect", "write"): 0.70,
    ("cpu", "interconnect+c2c", "read"): 0.45, ("cpu", "interconnect+c2c", "write"): 0.40,
    ("cpu", "pcie", "read"): 0.30, ("cpu", "pcie", "write"): 0.30,
}
FALLBACK_PEAK = 100.0   # GB/s where the peak model knows no figure (x86 socket memory)
BLOCK_KERNEL_GBPS = 60.0
# Contention (sec. III-C): the measured case's share of its alone bandwidth, and what the
# partner's reader gets, by (measured kind, memory role of the case, op). Roles not
# listed (peers) are unaffected and the reader gets NOISE_READER of its own path's peak.
CONTENTION: dict[tuple[str, str, str], tuple[float, float]] = {
    # Hopper measured while Grace reads its superchip's HBM: (case % of peak, reader GB/s)
    ("gpu", "local HBM", "write"): (0.65, 82.8),    # 2600 + 82.8 = 2682.8 GB/s on gpu0's HBM
    ("gpu", "local HBM", "read"): (0.80, 180.0),
    ("gpu", "device memory", "write"): (0.65, 82.8),
    ("gpu", "device memory", "read"): (0.80, 180.0),
    ("gpu", "local LPDDR", "read"): (0.80, 200.0),
    ("gpu", "local LPDDR", "write"): (0.75, 200.0),
    # Grace measured while Hopper reads its superchip's LPDDR
    ("cpu", "local HBM", "write"): (0.17, 380.0),
    ("cpu", "local HBM", "read"): (0.35, 380.0),
    ("cpu", "local LPDDR", "read"): (0.45, 250.0),
    ("cpu", "local LPDDR", "write"): (0.35, 250.0),
}
NOISE_READER = 0.80


def superchip_factor(pu: str) -> float:
    """1 % less per processor index, so that medians over processors are distinct."""
    digits = "".join(c for c in pu if c.isdigit())
    return 1.0 - 0.01 * (int(digits) if digits else 0)


class Node:
    """The topology's facts the model needs."""

    def __init__(self, topology: Mapping[str, Any]):
        self.topology = topology
        self.peaks = PeakModel(topology)
        self.procs = {p["name"]: p for p in topology["processors"]}
        self.mems = {m["name"]: m for m in topology["memories"]}
        self.paths = {(p["pu"], p["mem"]): p for p in topology["paths"]}

    def peak(self, pu: str, mem: str) -> float:
        return self.peaks.path(pu, mem).gbps or FALLBACK_PEAK

    def via(self, pu: str, mem: str) -> str:
        return self.paths[(pu, mem)]["via"]

    def default_alloc(self, pu: str, mem: str) -> str:
        """bw_plan.cpp's default_alloc: device, numa, registered, pinned, system, managed."""
        allocs = self.paths.get((pu, mem), {}).get("allocs", [])
        return next((a for a in ("device", "numa", "registered", "pinned", "system", "managed")
                     if a in allocs), "")

    def cores(self, pu: str) -> int:
        p = self.procs[pu]
        return int(p.get("cores") or len(p.get("cpus", [])) or 1)

    def sm_count(self, pu: str) -> int:
        return int(self.procs[pu].get("sm_count") or 132)

    def full_grid(self, pu: str) -> tuple[int, int]:
        """(blocks, threads) of the grid kernel: every SM full (2,048 threads each)."""
        sms = self.sm_count(pu)
        return sms * BLOCKS_PER_SM, sms * 2048

    def alone(self, pu: str, mem: str, op: str) -> float:
        """Modelled GB/s of read or write, all cores or the full grid."""
        kind = self.procs[pu]["kind"]
        fraction = MODEL.get((kind, self.via(pu, mem), op), 0.5)
        return self.peak(pu, mem) * fraction * superchip_factor(pu)

    def copy_rate(self, pu: str, src: str, dst: str) -> float:
        """Copy throughput as the paper defines it (buffer size / time): read and write of
        one buffer's bytes in turn, so the harmonic combination of the two rates."""
        return 1.0 / (1.0 / self.alone(pu, src, "read") + 1.0 / self.alone(pu, dst, "write"))

    def partner(self, pu: str) -> tuple[str, str, str, str]:
        """`--noise partner` (bw_plan.cpp partner_noise): (reader, memory, allocator, why not)."""
        p = self.procs[pu]
        if p["kind"] == "gpu":
            host, hbm = p.get("host_numa"), p.get("hbm_numa")
            if host is None:
                return "", "", "", f"{pu} reports no nearest NUMA node: no CPU socket to pair it with"
            if hbm is None:
                return "", "", "", (f"cpu{host} cannot read {pu}'s memory: it is device memory, not a NUMA "
                                    "node a CPU loads from (partner noise reads the GPU's HBM NUMA node, "
                                    "as on GH200)")
            reader, mem = f"cpu{host}", f"numa{hbm}"
        else:
            if p.get("numa") is None:
                return "", "", "", f"{pu} spans every socket; partner noise pairs one socket with its GPU: name cpuN"
            gpu = next((q for q in self.procs.values() if q["kind"] == "gpu"
                        and q.get("host_numa") == p["numa"]), None)
            if gpu is None:
                return "", "", "", f"no GPU is attached to {pu}: nothing to read its memory"
            reader, mem = gpu["name"], f"numa{p['numa']}"
        return reader, mem, self.default_alloc(reader, mem), ""


def _case(node: Node, op: str, pu: str, mem: str, alloc: str, *, dst: str = "", dst_alloc: str = "",
          threads: int = -1, kernel: str = "", gbps: float = math.nan, blocks: int = -1,
          reason: str = "", placement: str | None = None, dst_placement: str | None = None) -> dict[str, Any]:
    """One /bw/cases row as the C++ writer fills it."""
    kind = node.procs[pu]["kind"]
    ran = not reason and math.isfinite(gbps)
    if kind == "gpu" and threads < 0 and ran:
        blocks, threads = (1, 1024) if kernel == "block" else node.full_grid(pu)
    where = placement if placement is not None else (mem if ran else "")
    dst_where = dst_placement if dst_placement is not None else (dst if ran and dst else "")
    aliases = {f"numa{m['numa']}": m["name"] for m in node.mems.values()
               if m.get("kind") == "device" and m.get("numa") is not None}
    same = (lambda a, b: aliases.get(a, a) == aliases.get(b, b))
    placed = -1 if not ran else int(same(where, mem) and (not dst or same(dst_where, dst)))
    return {
        "op": op, "pu": pu, "pu_kind": kind, "mem": mem, "dst_mem": dst, "alloc": alloc,
        "dst_alloc": dst_alloc, "kernel": kernel or ("sve" if kind == "cpu" else "grid"),
        "threads": threads, "size_bytes": SIZE, "bytes": SIZE * (2 if op == "copy" else 1),
        "noise": "", "via": node.via(pu, mem), "status": "ok" if ran else "skipped",
        "reason": reason, "reps": REPS if ran else 0, "passes": 1,
        "median_GBps": gbps if ran else math.nan, "min_GBps": 0.97 * gbps if ran else math.nan,
        "max_GBps": 1.02 * gbps if ran else math.nan, "placement": where, "dst_placement": dst_where,
        "placed": placed, "verified": int(ran), "cache_resident": 0, "blocks": blocks,
        "noise_size_bytes": -1, "noise_threads": -1, "noise_bytes": 0, "noise_seconds": math.nan,
        "noise_GBps": math.nan,
    }


def _managed_placement(node: Node, pu: str, mem: str) -> str:
    """Where a managed buffer's pages end: a GPU pulls host pages of its superchip into its
    HBM; cpu1 pulls its GPU's pages into its LPDDR (one migration each way to draw)."""
    p = node.procs[pu]
    if p["kind"] == "gpu" and p.get("hbm_numa") is not None and mem == f"numa{p.get('host_numa')}":
        return f"numa{p['hbm_numa']}"
    if p["kind"] == "cpu" and p.get("numa") == 1 and role(node.topology, pu, mem) == "device memory":
        return "numa1"
    return mem


def bw_rows(node: Node) -> list[dict[str, Any]]:
    """bw --all (read, write with CPU thread sweeps, copy), then the GPU grid and CPU thread
    sweeps of local copies, then read and write with --noise partner."""
    rows: list[dict[str, Any]] = []
    pus = [p for p in node.procs.values() if not (p["kind"] == "cpu" and p.get("numa") is None)]
    every_socket = [p for p in node.procs.values() if p["kind"] == "cpu" and p.get("numa") is None]
    for op in ("read", "write"):
        for p in pus:
            pu, kind = p["name"], p["kind"]
            for mem in node.mems:
                path = node.paths.get((pu, mem))
                if path is None:
                    continue
                default = node.default_alloc(pu, mem)
                for alloc in path["allocs"]:
                    placed = _managed_placement(node, pu, mem) if alloc == "managed" else mem
                    gbps = node.alone(pu, placed if placed in node.mems else mem, op)
                    gbps *= 1.005 if placed != mem else 0.97 if alloc != default else 1.0
                    if kind == "cpu":
                        cores = node.cores(pu)
                        sweep = [1 << i for i in range(int(math.log2(cores)) + 1) if 1 << i < cores] + [cores]
                        for t in sweep if alloc == default else [cores]:
                            rate = min(gbps, gbps * t / (0.45 * cores))
                            rows.append(_case(node, op, pu, mem, alloc, threads=t, gbps=rate, placement=placed))
                    else:
                        rows.append(_case(node, op, pu, mem, alloc, kernel="grid", gbps=gbps, placement=placed))
                        rows.append(_case(node, op, pu, mem, alloc, kernel="block",
                                          gbps=min(gbps, BLOCK_KERNEL_GBPS), placement=placed))
                for skip in path.get("skipped", []):
                    if skip["alloc"] == "device" and node.mems[mem].get("kind") != "device":
                        continue  # bw_plan: alloc_fits_memory
                    rows.append(_case(node, op, pu, mem, skip["alloc"], reason=skip["reason"],
                                      threads=node.cores(pu) if kind == "cpu" else -1))
        for p in every_socket:
            for mem, m in node.mems.items():
                if m.get("kind") == "host":
                    rows.append(_case(node, op, p["name"], mem, "numa", threads=node.cores(p["name"]),
                                      gbps=node.alone(f"cpu{m['numa']}", mem, op) * 1.5))
    for p in pus:  # copies: every source x destination with the paths' default allocators
        pu, kind = p["name"], p["kind"]
        for src in node.mems:
            for dst in node.mems:
                a, b = node.default_alloc(pu, src), node.default_alloc(pu, dst)
                if not a or not b or "managed" in (a, b):
                    continue
                rate = node.copy_rate(pu, src, dst)
                rows.append(_case(node, "copy", pu, src, a, dst=dst, dst_alloc=b,
                                  threads=node.cores(pu) if kind == "cpu" else -1, gbps=2 * rate))
    for p in pus:  # sweeps of the local copies (--threads sweep), superchip 0 only
        pu, kind = p["name"], p["kind"]
        if superchip_factor(pu) != 1.0:
            continue
        local = [m for m in node.mems if role(node.topology, pu, m) in ("local LPDDR", "local DDR", "local HBM")]
        for src in local:
            for dst in local:
                a, b = node.default_alloc(pu, src), node.default_alloc(pu, dst)
                if not a or not b or "managed" in (a, b) or a == "device" or b == "device":
                    continue
                full = node.copy_rate(pu, src, dst)
                if kind == "cpu":
                    cores = node.cores(pu)
                    for t in [1 << i for i in range(int(math.log2(cores)) + 1) if 1 << i < cores] + [cores]:
                        rows.append(_case(node, "copy", pu, src, a, dst=dst, dst_alloc=b, threads=t,
                                          gbps=2 * min(full, full * t / (0.4 * cores))))
                else:
                    most = BLOCKS_PER_SM * node.sm_count(pu)
                    blocks = 1
                    while blocks <= most:
                        rate = min(full, full * blocks / (most / 4))
                        rows.append(_case(node, "copy", pu, src, a, dst=dst, dst_alloc=b, blocks=blocks,
                                          threads=blocks * BLOCK_THREADS, gbps=2 * rate))
                        blocks *= 2
    rows += noise_rows(node, pus)
    return rows


def noise_rows(node: Node, pus: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`bw --all --op read,write --threads all --kernel grid --noise partner`."""
    rows = []
    for op in ("read", "write"):
        for p in pus:
            pu, kind = p["name"], p["kind"]
            reader, noise_mem, noise_alloc, why = node.partner(pu)
            for mem in node.mems:
                if (pu, mem) not in node.paths:
                    continue
                alloc = node.default_alloc(pu, mem)
                threads = node.cores(pu) if kind == "cpu" else -1
                if why:
                    row = _case(node, op, pu, mem, alloc, threads=threads, reason=f"--noise partner: {why}")
                    row["noise"] = "partner"
                    rows.append(row)
                    continue
                r = role(node.topology, pu, mem)
                share, reader_gbps = CONTENTION.get(
                    (kind, r, op), (None, NOISE_READER * node.peak(reader, noise_mem)))
                alone = node.alone(pu, mem, op)
                gbps = (share * node.peak(pu, mem) * superchip_factor(pu)) if share else alone
                reader_gbps *= superchip_factor(pu)
                if noise_mem == mem and node.peaks.memory(mem).gbps:  # both on one memory: within its peak
                    reader_gbps = min(reader_gbps, max(0.0, 0.95 * node.peaks.memory(mem).gbps - gbps))
                row = _case(node, op, pu, mem, alloc, threads=threads, gbps=gbps)
                seconds = REPS * SIZE / (gbps * 1e9)
                row.update(noise=f"{reader}:{noise_mem}", noise_size_bytes=NOISE_SIZE,
                           noise_threads=node.cores(reader) - 1 if node.procs[reader]["kind"] == "cpu"
                           else node.full_grid(reader)[1],
                           noise_bytes=int(reader_gbps * 1e9 * seconds), noise_seconds=seconds,
                           noise_GBps=int(reader_gbps * 1e9 * seconds) / seconds / 1e9)
                rows.append(row)
    return rows


def samples(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Three /bw/samples rows per case that ran (its min, median and max)."""
    out = []
    for row in rows:
        if row["status"] != "ok":
            continue
        for rep, gbps in enumerate((row["min_GBps"], row["median_GBps"], row["max_GBps"])):
            sample = {k: row[k] for k in BW_SAMPLE_COLUMNS if k in row}
            sample.update(rep=rep, bandwidth_GBps=gbps, time_s=row["bytes"] / gbps / 1e9)
            out.append(sample)
    return out


def allocmatrix_rows(node: Node, gpu: int, hosts: Sequence[str]) -> list[dict[str, Any]]:
    """allocmatrix --gpu GPU --mem HOSTS: every allocator pair per host node, device ->
    device once (allocmatrix_row)."""
    device = f"gpu{gpu}"
    rows = []
    for h, host in enumerate(hosts):
        for sa in ALLOCATORS:
            for da in ALLOCATORS:
                if sa == da == "device" and h:
                    continue
                src = device if sa == "device" else host
                dst = device if da == "device" else host
                reason = ("synthetic: a case that did not run"
                          if sa == "registered" and node.mems[host].get("kind") == "hbm" else "")
                rows.append(allocmatrix_row(node, device, host, sa, da, src, dst, reason=reason))
    return rows


def allocmatrix_row(node: Node, device: str, host: str, sa: str, da: str, src: str, dst: str,
                    reason: str = "") -> dict[str, Any]:
    """One allocmatrix case of GPU ``device`` (its host node ``host``). Rates: pageable
    (system, numa) memory takes the slow host-staged copy wherever it lies (the paper's
    Fig. 5 finding); copy-engine copies run at the link's or HBM's rate; managed pages that
    a copy touches with a device buffer end in the HBM. ``reason``: a skipped case."""
    g = node.procs[device]
    hbm = f"numa{g['hbm_numa']}" if g.get("hbm_numa") is not None else device
    if reason:
        return {"src_alloc": sa, "src_mem": src, "dst_alloc": da, "dst_mem": dst,
                "size_bytes": ALLOCMATRIX_SIZE, "status": "skipped", "reason": reason, "reps": 0,
                "median_GBps": math.nan, "min_GBps": math.nan, "max_GBps": math.nan,
                "placement": "", "dst_placement": "", "verified": 0}
    managed_in_hbm = "device" in (sa, da) or (sa == da == "managed")
    src_at = hbm if sa == "managed" and managed_in_hbm else src
    dst_at = hbm if da == "managed" and managed_in_hbm else dst
    if "system" in (sa, da) or "numa" in (sa, da):
        gbps = 25.0 if node.mems[host].get("kind") == "host" else 22.0
    else:
        ends = (src_at, dst_at)
        slow = min(node.peak(device, at) for at in ends)
        towards_gpu = node.mems[dst_at].get("kind") in ("hbm", "device")
        gbps = slow * (0.84 if towards_gpu else 0.66)
        if all(node.mems[at].get("kind") in ("hbm", "device") for at in ends):
            gbps = 0.45 * slow   # a copy in HBM reads and writes it
        if not any(node.mems[at].get("kind") in ("hbm", "device") for at in ends):
            gbps = 0.40 * slow   # host to host through the copy engine
    gbps *= superchip_factor(device)
    return {"src_alloc": sa, "src_mem": src, "dst_alloc": da, "dst_mem": dst,
            "size_bytes": ALLOCMATRIX_SIZE, "status": "ok", "reason": "", "reps": REPS,
            "median_GBps": gbps, "min_GBps": 0.97 * gbps, "max_GBps": 1.02 * gbps,
            "placement": src_at, "dst_placement": dst_at, "verified": 1}


def allocmatrix_hosts(node: Node, gpu: int) -> list[str]:
    """The GPU's host node, its HBM node (GH200) and another superchip's host node."""
    g = node.procs[f"gpu{gpu}"]
    hosts = [f"numa{g['host_numa']}"] if g.get("host_numa") is not None else []
    if g.get("hbm_numa") is not None:
        hosts.append(f"numa{g['hbm_numa']}")
    others = [m for m, v in node.mems.items() if v.get("kind") == "host" and m not in hosts]
    return hosts + others[:1]


def write(folder: Path, topology: Mapping[str, Any], noise_bandwidth: bool = True) -> list[Path]:
    """bw.h5 and allocmatrix.h5 of a node of ``topology`` in ``folder``; ``noise_bandwidth``
    False leaves out `blocks` and the `noise_*` columns (a file from before them)."""
    folder.mkdir(parents=True, exist_ok=True)
    node = Node(topology)
    attrs = {"synthetic": 1, "arch": "aarch64" if "Grace" in str(topology.get("cpu_model")) else "x86_64"}
    rows = [{"case_id": i, **row} for i, row in enumerate(bw_rows(node))]
    columns = {**BW_CASE_COLUMNS, **(NOISE_CASE_COLUMNS if noise_bandwidth else {})}
    sample_columns = {**BW_SAMPLE_COLUMNS, **({"blocks": int} if noise_bandwidth else {})}
    bw = write_run(folder / "bw.h5", [], topology=topology, bw=False,
                   attrs={**attrs, "command_line": "mempath bw --all; bw --op copy --threads sweep; "
                                                   "bw --all --op read,write --threads all --noise partner"},
                   extra={"bw/cases": table(columns, rows), "bw/samples": table(sample_columns, samples(rows))})
    gpus = sorted(p["gpu"] for p in node.procs.values() if p["kind"] == "gpu")
    paths = [bw]
    if gpus:
        hosts = allocmatrix_hosts(node, gpus[0])
        cases = [{"case_id": i, **row} for i, row in enumerate(allocmatrix_rows(node, gpus[0], hosts))]
        reps = [{**{k: c[k] for k in ALLOC_SAMPLE_COLUMNS if k in c}, "rep": rep,
                 "bandwidth_GBps": gbps, "time_s": c["size_bytes"] / gbps / 1e9}
                for c in cases if c["status"] == "ok"
                for rep, gbps in enumerate((c["min_GBps"], c["median_GBps"], c["max_GBps"]))]
        paths.append(write_run(folder / "allocmatrix.h5", [], topology=topology, bw=False,
                               attrs={**attrs, "command_line": f"mempath allocmatrix --gpu {gpus[0]} "
                                                               f"--mem {','.join(hosts)}"},
                               extra={"allocmatrix/cases": table(ALLOC_CASE_COLUMNS, cases),
                                      "allocmatrix/samples": table(ALLOC_SAMPLE_COLUMNS, reps)}))
    return paths


if __name__ == "__main__":  # python tests/python/synth_bandwidth.py OUT [topology name]
    import sys
    from h5fixtures import topology as fixture
    out = Path(sys.argv[1])
    print(json.dumps([str(p) for p in write(out, fixture(sys.argv[2] if len(sys.argv) > 2 else "gh200_quad"))]))
