"""A synthetic node-report set of one node (the quad GH200 by default): every family the
report draws, at the size `mempath ... --all` plans on that node, so that the figures meet
their worst case (4 CPUs + 4 GPUs, 12 memories, 8 agents, 16 host<->device paths).

``write(folder, topology)`` writes one .h5 per family and returns the paths. Values come
from a model (analysis.model.peaks for bandwidths, GH200-like constants for latencies and
TFLOP/s), never from a measurement: every file carries the root attribute ``synthetic`` = 1.
Tables follow docs/schema.md column by column (h5fixtures and analysis.results.h5writer).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from analysis.model.peaks import PeakModel
from h5fixtures import case, memcpy_case, table, write_run

SYNTHETIC = {"synthetic": 1, "tool_version": "synthetic", "command_line": "tests/python/synth_report.py"}
EFFICIENCY = 0.85          # achieved / peak (as tests/fleetsim/sim.py)
UNKNOWN_GBPS = 200.0       # where the model knows no capacity
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

CHASE_CASES: dict[str, type] = {
    "case_id": int, "pu": str, "cpu": int, "mem": str, "alloc": str, "pattern": str, "size_bytes": int,
    "line_bytes": int, "locality_bytes": int, "huge_pages": int, "accesses": int, "via": str,
    "status": str, "reason": str, "reps": int, "median_ns": float, "min_ns": float,
    "median_cycles": float, "huge_page_fraction": float, "placement": str, "placed": int, "verified": int}
CHASE_SAMPLES: dict[str, type] = {
    "case_id": int, "rep": int, "pu": str, "cpu": int, "mem": str, "alloc": str, "pattern": str,
    "size_bytes": int, "line_bytes": int, "locality_bytes": int, "huge_pages": int, "accesses": int,
    "time_s": float, "ns_per_access": float, "cycles_per_access": float}
CHASE_CACHES: dict[str, type] = {"pu": str, "level": str, "bytes": int, "source": str}
PINGPONG_CASES: dict[str, type] = {
    "case_id": int, "a": str, "b": str, "a_cpu": int, "b_cpu": int, "mem": str, "alloc": str, "via": str,
    "flag_bytes": int, "round_trips": int, "status": str, "reason": str, "median_ns": float,
    "mean_ns": float, "min_ns": float, "p05_ns": float, "p95_ns": float, "p99_ns": float,
    "max_ns": float, "placement": str, "placed": int, "verified": int}
PINGPONG_SAMPLES: dict[str, type] = {"case_id": int, "index": int, "rtt_ns": float}
STREAM_CASES: dict[str, type] = {
    "case_id": int, "pu": str, "pu_kind": str, "mem": str, "alloc": str, "via": str, "threads": int,
    "kernel": str, "elements": int, "array_bytes": int, "bytes": int, "status": str, "reason": str,
    "reps": int, "best_GBps": float, "median_GBps": float, "min_GBps": float, "max_GBps": float,
    "verified": int, "placement": str, "placed": int, "sweep": int, "best_threads": int}
STREAM_SAMPLES: dict[str, type] = {"case_id": int, "rep": int, "time_s": float, "bandwidth_GBps": float}
GEMM_CASES: dict[str, type] = {
    "case_id": int, "gpu": int, "dtype": str, "m": int, "n": int, "k": int, "a_mem": str, "a_alloc": str,
    "b_mem": str, "b_alloc": str, "c_mem": str, "via": str, "status": str, "reason": str, "reps": int,
    "median_TFLOPs": float, "best_TFLOPs": float, "min_TFLOPs": float, "peak_TFLOPs": float,
    "fraction_of_peak": float, "operand_bytes": int, "flops": float, "placement": str, "placed": int,
    "verified": int, "cublas_version": int, "calls_per_rep": int}
GEMM_SAMPLES: dict[str, type] = {"case_id": int, "rep": int, "time_s": float, "tflops": float}
ALLOC_CASES: dict[str, type] = {
    "case_id": int, "src_alloc": str, "src_mem": str, "dst_alloc": str, "dst_mem": str, "size_bytes": int,
    "status": str, "reason": str, "reps": int, "median_GBps": float, "min_GBps": float, "max_GBps": float,
    "placement": str, "dst_placement": str, "verified": int}
ALLOC_SAMPLES: dict[str, type] = {
    "case_id": int, "rep": int, "src_alloc": str, "src_mem": str, "dst_alloc": str, "dst_mem": str,
    "size_bytes": int, "time_s": float, "bandwidth_GBps": float}
MPI_CASES: dict[str, type] = {
    "case_id": int, "mode": str, "alloc": str, "mem": str, "ppn": int, "pairs": int, "size_bytes": int,
    "window": int, "windows": int, "status": str, "reason": str, "reps": int, "median_GBps": float,
    "min_GBps": float, "max_GBps": float, "same_host": int, "verified": int}
MPI_SAMPLES: dict[str, type] = {
    "case_id": int, "rep": int, "mode": str, "alloc": str, "ppn": int, "size_bytes": int, "bytes": int,
    "time_s": float, "bandwidth_GBps": float}

SKIP_DEVICE = "cudaMalloc memory is not mapped for CPU access"


class Node:
    """The topology's processors, memories and paths, and the model's peaks."""

    def __init__(self, topology: Mapping[str, Any]):
        self.topology = topology
        self.model = PeakModel(topology)
        self.cpus = [p for p in topology["processors"] if p["kind"] == "cpu" and p.get("numa") is not None]
        self.gpus = [p for p in topology["processors"] if p["kind"] == "gpu"]
        self.memories = [m["name"] for m in topology["memories"]]
        self.host = [m["name"] for m in topology["memories"] if m["kind"] == "host"]
        self.paths = {(p["pu"], p["mem"]): p for p in topology.get("paths", [])}

    def gbps(self, pu: str, mem: str) -> float:
        peak = self.model.path(pu, mem).gbps
        return (peak or UNKNOWN_GBPS) * EFFICIENCY

    def via(self, pu: str, mem: str) -> str:
        return str(self.paths.get((pu, mem), {}).get("via", "local"))

    def alloc(self, pu: str, mem: str) -> str:
        """The allocator `bw --all` sweeps a path with (its first of device, numa, managed)."""
        allocs = self.paths.get((pu, mem), {}).get("allocs", [])
        return next((a for a in ("device", "numa", "managed") if a in allocs), allocs[0] if allocs else "")


def _bw(node: Node) -> list[dict[str, Any]]:
    """Read and write of every path (CPU: the thread sweep of its default allocator), copies
    of every source x destination pair at full width (as src/core/bw_plan.cpp plans them)."""
    rows = []
    for op, factor in (("read", 1.0), ("write", 0.9)):
        for p in node.cpus:
            cores = int(p["cores"])
            sweep = [t for t in (1 << i for i in range(8)) if t < cores] + [cores]
            for mem in node.memories:
                alloc = node.alloc(p["name"], mem)
                if not alloc:
                    continue
                full = node.gbps(p["name"], mem) * factor
                for t in sweep:
                    value = full * (1 - math.exp(-6 * t / cores)) / (1 - math.exp(-6))
                    rows.append(case(op=op, pu=p["name"], mem=mem, alloc=alloc, via=node.via(p["name"], mem),
                                     threads=t, median_GBps=round(value, 2)))
        for p in node.gpus:
            for mem in node.memories:
                alloc = node.alloc(p["name"], mem)
                if alloc:
                    rows.append(case(op=op, pu=p["name"], mem=mem, alloc=alloc, via=node.via(p["name"], mem),
                                     threads=int(p["sm_count"]) * 2048,
                                     median_GBps=round(node.gbps(p["name"], mem) * factor, 2)))
    for p in [*node.cpus, *node.gpus]:
        gpu = p["kind"] == "gpu"
        for src in node.memories:
            for dst in node.memories:
                a, b = node.alloc(p["name"], src), node.alloc(p["name"], dst)
                if "managed" in (a, b) or not a or not b:
                    continue  # managed-only paths: measured by read/write, not copy
                value = 0.5 * min(node.gbps(p["name"], src), node.gbps(p["name"], dst))
                threads = int(p["sm_count"]) * 2048 if gpu else int(p["cores"])
                if p["name"] == "cpu3" and src == dst == "numa3":
                    rows.append(case(op="copy", pu="cpu3", mem=src, dst_mem=dst, alloc=a, dst_alloc=b,
                                     via="local", threads=threads, status="failed",
                                     reason="verification failed: 3 words differ (synthetic)"))
                    continue
                rows.append(case(op="copy", pu=p["name"], mem=src, dst_mem=dst, alloc=a, dst_alloc=b,
                                 via=node.via(p["name"], src), threads=threads, median_GBps=round(value, 2)))
    return rows


def _memcpy(node: Node) -> list[dict[str, Any]]:
    """Sweeps 4 KiB .. 1 GiB of every GPU to and from every host node (pinned, copy engine),
    both directions at once to its own node, GPU<->GPU sweeps of every ordered pair, and the
    small-copy latency of each GPU with its own node."""
    rows = []
    sizes = [4 * KiB << i for i in range(19)]

    def curve(peak: float, size: int) -> float:
        return round(peak * size / (size + 2 * MiB), 3)

    for g in node.gpus:
        gpu, local = int(g["gpu"]), int(g["host_numa"])
        for numa in range(len(node.host)):
            peak = 0.8 * node.gbps(g["name"], f"numa{numa}")
            for direction in ("h2d", "d2h") + (("bidir",) if numa == local else ()):
                top = peak * (1.6 if direction == "bidir" else 1.0)
                rows += [memcpy_case(gpu=gpu, host_numa=numa, cpu_numa=numa, direction=direction,
                                     via=node.via(g["name"], f"numa{numa}"), sweep=1, size_bytes=s,
                                     median_GBps=curve(top, s)) for s in sizes]
        for h in node.gpus:
            if h is not g:
                rows += [memcpy_case(gpu=gpu, dst_gpu=int(h["gpu"]), direction="d2d", engine="ce",
                                     host_numa=-1, cpu_numa=local, alloc="device", via="nvlink", sweep=1,
                                     size_bytes=s, median_GBps=curve(0.8 * node.gbps(g["name"], h["name"]), s))
                         for s in sizes]
        for direction, base in (("h2d", 6.0), ("d2h", 7.0)):
            rows += [memcpy_case(gpu=gpu, host_numa=local, cpu_numa=local, direction=direction,
                                 via=node.via(g["name"], f"numa{local}"), size_bytes=s,
                                 median_us=base + s / 40e3, p99_us=1.5 * base + s / 35e3)
                     for s in (4, 64, KiB, 16 * KiB, 256 * KiB, MiB)]
    return rows


def _chase(node: Node) -> dict[str, list]:
    """Random chains 4 KiB .. 1 GiB from every processor (a CPU: its socket's first core) to
    every memory it can chase, sequential ones to its own memory; the cache sizes."""
    sizes = [4 * KiB << 2 * i for i in range(10)]
    caches = {"cpu": [("L1d", 64 * KiB), ("L2", MiB), ("L3", 114 * MiB)],
              "gpu": [("L1", 256 * KiB), ("L2", 50 * MiB)]}
    inner = {"cpu": (1.2, 4.0, 30.0), "gpu": (35.0, 200.0)}
    rows, cache_rows = [], []
    for p in [*node.cpus, *node.gpus]:
        kind = p["kind"]
        cache_rows += [{"pu": p["name"], "level": lv, "bytes": b, "source": "sysfs" if kind == "cpu" else "cuda"}
                       for lv, b in caches[kind]]
        own = f"numa{p['numa']}" if kind == "cpu" else p["name"]
        for mem in node.memories:
            alloc = node.alloc(p["name"], mem)
            if not alloc:
                continue
            via = node.via(p["name"], mem)
            far = 120.0 if via == "local" else 120.0 + 150.0 * via.count("+") + 130.0
            if kind == "gpu":
                far = 650.0 if via == "local" else 900.0 + 250.0 * via.count("+")
            for pattern in ("random", "sequential") if mem == own else ("random",):
                for s in sizes:
                    level = next((i for i, (_, b) in enumerate(caches[kind]) if s <= b), None)
                    ns = inner[kind][level] if level is not None else far
                    ns = ns if pattern == "random" else 0.02 * ns + 1.0
                    rows.append({"pu": p["name"], "cpu": p["cpus"][0] if kind == "cpu" else -1, "mem": mem,
                                 "alloc": alloc, "pattern": pattern, "size_bytes": s, "line_bytes": 64,
                                 "locality_bytes": s, "huge_pages": 0, "accesses": 1 << 20, "via": via,
                                 "status": "ok", "reason": "", "reps": 3, "median_ns": ns, "min_ns": 0.98 * ns,
                                 "median_cycles": ns * 1.98 if kind == "gpu" else math.nan,
                                 "huge_page_fraction": 0.0, "placement": mem, "placed": 1, "verified": 1})
    rows = [{"case_id": i, **r} for i, r in enumerate(rows)]
    samples = [{**{k: r[k] for k in CHASE_SAMPLES if k in r}, "rep": rep, "ns_per_access": r["median_ns"],
                "cycles_per_access": r["median_cycles"], "time_s": r["median_ns"] * r["accesses"] * 1e-9}
               for r in rows for rep in range(3)]
    return {"chase/cases": table(CHASE_CASES, rows), "chase/samples": table(CHASE_SAMPLES, samples),
            "chase/caches": table(CHASE_CACHES, cache_rows)}


def _pingpong(node: Node) -> dict[str, list]:
    """Every pair of the 8 agents (two cores of one socket too) on a flag in each host node
    (pinned), in numa0 (numa) and in each GPU's memory (device): CPU pairs cannot share
    cudaMalloc memory (skipped)."""
    agents = [(p["name"], p["cpus"][0] if p["kind"] == "cpu" else -1, p) for p in [*node.cpus, *node.gpus]]
    flags = [(m, "pinned") for m in node.host] + [(node.host[0], "numa")] + \
            [(g["name"], "device") for g in node.gpus]
    home = {p["name"]: (f"numa{p['numa']}" if p["kind"] == "cpu" else p["name"]) for _, _, p in agents}
    rows, samples = [], []
    for mem, alloc in flags:
        for i, (a, a_cpu, pa) in enumerate(agents):
            for b, b_cpu, pb in agents[i:]:
                gpus = (pa["kind"] == "gpu") + (pb["kind"] == "gpu")
                row = {"case_id": len(rows), "a": a, "b": b, "a_cpu": a_cpu,
                       "b_cpu": (a_cpu + 1 if a == b else b_cpu), "mem": mem, "alloc": alloc,
                       "via": "local", "flag_bytes": 1, "placement": mem}
                if alloc == "device" and gpus == 0:
                    rows.append({**row, "round_trips": 0, "status": "skipped", "reason": SKIP_DEVICE,
                                 "placement": "", "placed": -1, "verified": 0})
                    continue
                far = sum(home[x] != mem for x in (a, b))
                median = (150.0, 900.0, 1500.0)[gpus] + 350.0 * far
                rtt = median * np.linspace(0.9, 1.5, 201) / np.linspace(0.9, 1.5, 201)[100]
                samples += [{"case_id": row["case_id"], "index": k, "rtt_ns": float(v)} for k, v in enumerate(rtt)]
                rows.append({**row, "round_trips": len(rtt), "status": "ok", "reason": "", "median_ns": median,
                             "mean_ns": float(rtt.mean()), "min_ns": float(rtt.min()),
                             "p05_ns": float(np.quantile(rtt, 0.05)), "p95_ns": float(np.quantile(rtt, 0.95)),
                             "p99_ns": float(np.quantile(rtt, 0.99)), "max_ns": float(rtt.max()), "placed": 1,
                             "verified": 1})
    return {"pingpong/cases": table(PINGPONG_CASES, rows), "pingpong/samples": table(PINGPONG_SAMPLES, samples)}


def _stream(node: Node) -> dict[str, list]:
    """A CPU thread sweep per socket on its own node; every GPU's kernels on its HBM, its
    own host node (numa, pinned, managed) and a peer's HBM."""
    rows = []
    for p in node.cpus:
        mem, cores = f"numa{p['numa']}", int(p["cores"])
        sweep = [t for t in (1 << i for i in range(8)) if t < cores] + [cores]
        for t in sweep:
            for kernel, arrays in (("copy", 2), ("scale", 2), ("add", 3), ("triad", 3)):
                full = node.gbps(p["name"], mem) * (0.95 if arrays == 3 else 0.9)
                rows.append(dict(pu=p["name"], pu_kind="cpu", mem=mem, alloc="numa", via="local", threads=t,
                                 kernel=kernel, arrays=arrays, sweep=1,
                                 best_GBps=full * (1 - math.exp(-6 * t / cores)) / (1 - math.exp(-6))))
    for g in node.gpus:
        local = f"numa{g['host_numa']}"
        peer = node.gpus[(int(g["gpu"]) + 1) % len(node.gpus)]
        for mem, alloc in ((g["name"], "device"), (local, "numa"), (local, "pinned"), (local, "managed"),
                           (peer["name"], "device")):
            for kernel, arrays in (("copy", 2), ("mul", 2), ("add", 3), ("triad", 3), ("dot", 2)):
                rows.append(dict(pu=g["name"], pu_kind="gpu", mem=mem, alloc=alloc, via=node.via(g["name"], mem),
                                 threads=1 << 27, kernel=kernel, arrays=arrays, sweep=0,
                                 best_GBps=node.gbps(g["name"], mem) * (0.5 if kernel == "dot" else 0.95)))
    cases, samples = [], []
    for i, r in enumerate(rows):
        arrays, best = r.pop("arrays"), round(r.pop("best_GBps"), 2)
        cases.append({**r, "case_id": i, "elements": 1 << 27, "array_bytes": 1 << 30, "bytes": arrays << 30,
                      "status": "ok", "reason": "", "reps": 3, "best_GBps": best, "median_GBps": 0.98 * best,
                      "min_GBps": 0.95 * best, "max_GBps": best, "verified": 1, "placement": r["mem"],
                      "placed": 1, "best_threads": -1})
        samples += [{"case_id": i, "rep": k, "bandwidth_GBps": v * best, "time_s": (arrays << 30) / (v * best * 1e9)}
                    for k, v in enumerate((0.95, 0.98, 1.0))]
    for p in node.cpus:  # the sweep's best triad thread count, on every row of the sweep
        mine = [c for c in cases if c["pu"] == p["name"] and c["sweep"] == 1]
        top = max((c for c in mine if c["kernel"] == "triad"), key=lambda c: c["best_GBps"])["threads"]
        for c in mine:
            c["best_threads"] = top
    return {"stream/cases": table(STREAM_CASES, cases), "stream/samples": table(STREAM_SAMPLES, samples)}


def _gemm(node: Node) -> dict[str, list]:
    """gpu0: fp16 and fp64 GEMMs 1024 .. 16384 with A and B in its HBM, its host node,
    a peer's HBM and a peer host node; C in its HBM."""
    g = node.gpus[0]
    peaks = {"fp16": 989.0, "fp64": 67.0}
    placements = [(g["name"], "device"), (f"numa{g['host_numa']}", "pinned"), (node.gpus[1]["name"], "device"),
                  (node.host[1], "pinned")]
    rows, samples = [], []
    for dtype, peak in peaks.items():
        for mem, alloc in placements:
            path = node.gbps(g["name"], mem)
            for n in (1024, 2048, 4096, 8192, 16384):
                flops, operand = 2.0 * n ** 3, 2 * n * n * (2 if dtype == "fp16" else 8)
                # Roofline of the operands' path: the time to read A and B once, or the compute.
                seconds = max(flops / (0.8 * peak * 1e12), operand / (path * 1e9)) + 5e-6
                value = flops / seconds / 1e12
                i = len(rows)
                rows.append({"case_id": i, "gpu": int(g["gpu"]), "dtype": dtype, "m": n, "n": n, "k": n,
                             "a_mem": mem, "a_alloc": alloc, "b_mem": mem, "b_alloc": alloc, "c_mem": g["name"],
                             "via": node.via(g["name"], mem), "status": "ok", "reason": "", "reps": 3,
                             "median_TFLOPs": value, "best_TFLOPs": 1.01 * value, "min_TFLOPs": 0.98 * value,
                             "peak_TFLOPs": peak, "fraction_of_peak": value / peak, "operand_bytes": operand,
                             "flops": flops, "placement": mem, "placed": 1, "verified": 1,
                             "cublas_version": 120400, "calls_per_rep": 1})
                samples += [{"case_id": i, "rep": k, "tflops": value * v, "time_s": flops / (value * v * 1e12)}
                            for k, v in enumerate((0.98, 1.0, 1.01))]
    return {"gemm/cases": table(GEMM_CASES, rows), "gemm/samples": table(GEMM_SAMPLES, samples)}


def _allocmatrix(node: Node) -> dict[str, list]:
    """cudaMemcpy between every pair of allocators, host memory in each host node, device
    memory on gpu0; system memory is pageable (slower), device -> device once."""
    g = node.gpus[0]
    host_allocs = ("system", "numa", "pinned", "registered", "managed")
    rows, samples = [], []

    def add(src_alloc: str, src: str, dst_alloc: str, dst: str, value: float) -> None:
        i = len(rows)
        rows.append({"case_id": i, "src_alloc": src_alloc, "src_mem": src, "dst_alloc": dst_alloc, "dst_mem": dst,
                     "size_bytes": GiB, "status": "ok", "reason": "", "reps": 3, "median_GBps": value,
                     "min_GBps": 0.97 * value, "max_GBps": 1.02 * value, "placement": src, "dst_placement": dst,
                     "verified": 1})
        samples.extend({"case_id": i, "rep": k, "src_alloc": src_alloc, "src_mem": src, "dst_alloc": dst_alloc,
                        "dst_mem": dst, "size_bytes": GiB, "bandwidth_GBps": value * v,
                        "time_s": GiB / (value * v * 1e9)} for k, v in enumerate((0.97, 1.0, 1.02)))

    for numa in node.host:
        link = 0.8 * node.gbps(g["name"], numa)
        for a in (*host_allocs, "device"):
            for b in (*host_allocs, "device"):
                if a == b == "device":
                    continue
                src, dst = (g["name"] if a == "device" else numa), (g["name"] if b == "device" else numa)
                pageable = "system" in (a, b)
                value = link * (0.3 if pageable else 1.0) if "device" in (a, b) else 0.4 * link
                add(a, src, b, dst, round(value, 2))
    add("device", g["name"], "device", g["name"], round(0.45 * node.gbps(g["name"], g["name"]), 2))
    return {"allocmatrix/cases": table(ALLOC_CASES, rows), "allocmatrix/samples": table(ALLOC_SAMPLES, samples)}


def _mpi(node: Node) -> dict[str, list]:
    """Two quad nodes over Slingshot (25 GB/s per NIC, one NIC per superchip): uni- and
    bidirectional, 1 and 4 ranks per node, host and device buffers, 1 KiB .. 16 MiB."""
    rows, samples = [], []
    for mode in ("uni", "bi"):
        for alloc, mem in (("numa", "numa"), ("device", "gpu")):
            for ppn in (1, 4):
                for s in (KiB << 2 * i for i in range(8)):
                    top = 23.0 * ppn * (2 if mode == "bi" else 1) * (0.9 if alloc == "device" else 1.0)
                    value = round(top * s / (s + 64 * KiB), 3)
                    i = len(rows)
                    rows.append({"case_id": i, "mode": mode, "alloc": alloc, "mem": mem, "ppn": ppn, "pairs": ppn,
                                 "size_bytes": s, "window": 64, "windows": 10, "status": "ok", "reason": "",
                                 "reps": 3, "median_GBps": value, "min_GBps": 0.95 * value, "max_GBps": 1.03 * value,
                                 "same_host": 0, "verified": int(alloc == "numa")})
                    moved = s * 64 * 10 * ppn * (2 if mode == "bi" else 1)
                    samples += [{"case_id": i, "rep": k, "mode": mode, "alloc": alloc, "ppn": ppn,
                                 "size_bytes": s, "bytes": moved, "bandwidth_GBps": value * v,
                                 "time_s": moved / (value * v * 1e9)} for k, v in enumerate((0.95, 1.0, 1.03))]
    return {"mpi_bw/cases": table(MPI_CASES, rows), "mpi_bw/samples": table(MPI_SAMPLES, samples)}


def write(folder: Path, topology: Mapping[str, Any]) -> list[Path]:
    """One synthetic .h5 per family into ``folder`` (created); their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    node = Node(topology)
    topo = dict(topology)
    paths = [write_run(folder / "bw.h5", _bw(node), topology=topo, attrs=SYNTHETIC),
             write_run(folder / "memcpy.h5", [], topology=topo, bw=False, memcpy=_memcpy(node), attrs=SYNTHETIC)]
    for name, build in (("chase", _chase), ("pingpong", _pingpong), ("stream", _stream), ("gemm", _gemm),
                        ("allocmatrix", _allocmatrix), ("mpi_bw", _mpi)):
        paths.append(write_run(folder / f"{name}.h5", [], topology=topo, bw=False, extra=build(node),
                               attrs=SYNTHETIC))
    return paths
