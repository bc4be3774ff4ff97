"""Synthetic quad-GH200 result files for the paper's application and latency figures:
`mempath um --exp interleave` (Fig. 4), `mempath chase` (Figs. 11-12), `mempath pingpong`
(Fig. 13), `mempath gemm` with A and B placed independently (Figs. 15-16, Table III) and
`mempath llm` on Llama-2 7B/13B (Fig. 17).

The values come from a small, plausible model of a GH200 node written below (latencies of
each cache level and memory, link bandwidths, a roofline for GEMM and decode); they are
NOT measurements and every file says so (root attribute synthetic=1). The tables have
exactly the columns docs/schema.md and the writers give them (um: with the first-placement
columns; gemm: with B placed apart; llm: with the Llama-2 columns).

``write(folder, topology)`` writes one file per family and returns their paths."""
from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from h5fixtures import table, write_run  # noqa: I001  (puts the repo root on sys.path first)
from analysis.model.roles import role
from analysis.results.families import columns
from analysis.results.h5writer import KIND_OF_TYPE

SYNTHETIC = {"synthetic": 1, "git_revision": "synthetic", "tool_version": "0.2.0"}
GPU_CLOCKS = [{"gpu": g, "sm_clock_khz": 1980000, "mem_clock_khz": 2619000} for g in range(4)]

# ---- tables, as the writers define them (src/apps/*_command.cpp) ----
UM_SAMPLES = {"case_id": int, "experiment": str, "alloc": str, "gpu": str, "mem": str, "size_bytes": int,
              "iterations": int, "rep": int, "run": int, "phase": str, "preceded_by": str, "state": str,
              "bytes": int, "time_s": float, "bandwidth_GBps": float, "placement": str, "first_touch": str,
              "first_placement": str, "app_time_s": float}
UM_CASES = {"case_id": int, "experiment": str, "alloc": str, "gpu": str, "mem": str, "size_bytes": int,
            "status": str, "reason": str, "verified": int, "first_GBps": float, "later_GBps": float,
            "cold_GBps": float, "warm_GBps": float, "evicted_GBps": float, "gpu_iter_us_n1": float,
            "gpu_iter_us_nmax": float, "max_iterations": int, "placement": str, "first_touch": str,
            "first_placement": str}
CHASE_SAMPLES = {"case_id": int, "rep": int, "pu": str, "cpu": int, "mem": str, "alloc": str, "pattern": str,
                 "size_bytes": int, "line_bytes": int, "locality_bytes": int, "huge_pages": int, "accesses": int,
                 "time_s": float, "ns_per_access": float, "cycles_per_access": float}
CHASE_CASES = {"case_id": int, "pu": str, "cpu": int, "mem": str, "alloc": str, "pattern": str, "size_bytes": int,
               "line_bytes": int, "locality_bytes": int, "huge_pages": int, "accesses": int, "via": str,
               "status": str, "reason": str, "reps": int, "median_ns": float, "min_ns": float,
               "median_cycles": float, "huge_page_fraction": float, "placement": str, "placed": int, "verified": int}
CHASE_CACHES = {"pu": str, "level": str, "bytes": int, "source": str}
PINGPONG_SAMPLES = {"case_id": int, "index": int, "rtt_ns": float}
PINGPONG_CASES = {"case_id": int, "a": str, "b": str, "a_cpu": int, "b_cpu": int, "mem": str, "alloc": str,
                  "via": str, "flag_bytes": int, "round_trips": int, "status": str, "reason": str,
                  "median_ns": float, "mean_ns": float, "min_ns": float, "p05_ns": float, "p95_ns": float,
                  "p99_ns": float, "max_ns": float, "placement": str, "placed": int, "verified": int}
GEMM_SAMPLES = {"case_id": int, "rep": int, "time_s": float, "tflops": float}
GEMM_CASES = {"case_id": int, "gpu": int, "dtype": str, "m": int, "n": int, "k": int, "a_mem": str, "a_alloc": str,
              "b_mem": str, "b_alloc": str, "c_mem": str, "c_alloc": str, "via": str, "b_via": str, "status": str,
              "reason": str, "reps": int, "median_TFLOPs": float, "best_TFLOPs": float, "min_TFLOPs": float,
              "peak_TFLOPs": float, "fraction_of_peak": float, "operand_bytes": int, "flops": int,
              "placement": str, "b_placement": str, "placed": int, "verified": int, "cublas_version": int,
              "calls_per_rep": int}
# The LLM tables as `mempath llm` writes them (src/core/families.def's rows, not a copy).
LLM_CASES, LLM_SAMPLES = ({c.name: KIND_OF_TYPE[c.type] for c in columns(f"llm/{t}")} for t in ("cases", "samples"))

# ---- the model of the node (GH200 figures of the paper's order of magnitude; not measured) ----
UM_SIZE = 256 << 20
UM_PAGE = 64 << 10
# One Grace core writing (GB/s), a store per page (s), GPU memset bandwidth (GB/s), page
# migration (GB/s) and a faulting store's cost on a migrating page (s).
UM_CPU_WRITE_GBPS = {"host": 25.0, "hbm": 12.0}
UM_CPU_STORE_S = {"host": 0.15e-6, "hbm": 0.8e-6}
UM_GPU_WRITE_GBPS = {"host": 250.0, "hbm": 3000.0}
UM_MIGRATE_TO_GPU_GBPS, UM_MIGRATE_TO_CPU_GBPS, UM_FAULT_S = 6.0, 8.0, 25e-6

CPU_CACHES = (("L1d", 64 << 10, 1.2, "sysfs"), ("L2", 1 << 20, 6.0, "sysfs"), ("L3", 119537664, 35.0, "sysfs"))
GPU_CACHES = (("L1", 256 << 10, 40.0, "table"), ("L2", 52428800, 260.0, "cuda"))
# Memory latency (ns) by the role of the memory seen from the processor.
CPU_MEMORY_NS = {"local LPDDR": 120.0, "peer LPDDR": 350.0, "local HBM": 650.0, "peer HBM": 850.0,
                 "device memory": 650.0, "peer device memory": 850.0}
GPU_MEMORY_NS = {"local LPDDR": 850.0, "peer LPDDR": 1400.0, "local HBM": 480.0, "device memory": 480.0,
                 "peer HBM": 1100.0, "peer device memory": 1100.0}
# A GPU's read bandwidth (GB/s) by memory role: its HBM, LPDDR over C2C, peers over NVLink.
GPU_READ_GBPS = {"local HBM": 3400.0, "device memory": 3400.0, "local LPDDR": 380.0, "peer LPDDR": 100.0,
                 "peer HBM": 130.0, "peer device memory": 130.0}
GEMM_PEAK = {"fp16": 1070.5, "tf32": 535.3, "fp32": 66.9, "fp64": 66.9}        # 132 SMs at 1980 MHz
GEMM_ACHIEVED = {"fp16": 780.0, "tf32": 400.0, "fp32": 51.0, "fp64": 60.0}     # what cuBLAS reaches
ELEMENT = {"fp16": 2, "tf32": 4, "fp32": 4, "fp64": 8}
LLAMA2 = {"llama-2-7b": dict(hidden=4096, layers=32, intermediate=11008, vocab=32000),
          "llama-2-13b": dict(hidden=5120, layers=40, intermediate=13824, vocab=32000)}
DECODE_OVERHEAD_S = 3e-3   # per token, beside reading the weights


def _role(topology: Mapping[str, Any], pu: str, mem: str) -> str:
    return role(topology, pu, mem)


def _via(topology: Mapping[str, Any], pu: str, mem: str) -> str:
    return next((p["via"] for p in topology.get("paths", []) if p["pu"] == pu and p["mem"] == mem), "")


def _attrs(topology: Mapping[str, Any], command: str, **more: Any) -> dict[str, Any]:
    return {**SYNTHETIC, "command_line": command, "host": topology.get("host", "gh200_quad"),
            "gpu_clocks": json.dumps(GPU_CLOCKS), "page_size": UM_PAGE, **more}


def _jitter(rng: random.Random, value: float, spread: float = 0.01) -> float:
    return value * (1 + rng.uniform(-spread, spread))


# ---- um: Fig. 4 ----
def um_step(alloc: str, where: str, phase: str, n: int) -> tuple[float, float]:
    """(CPU phase s, GPU burst s) of one step: ``where`` is host or hbm (first placement of
    system memory); managed pages move to the GPU on its first memset and back on the CPU's."""
    size_gb = UM_SIZE / 1e9
    pages = UM_SIZE // UM_PAGE
    if alloc == "system":
        cpu = size_gb / UM_CPU_WRITE_GBPS[where] if phase == "cpu_memset" else pages * UM_CPU_STORE_S[where]
        return cpu, n * size_gb / UM_GPU_WRITE_GBPS[where]
    back = size_gb / UM_MIGRATE_TO_CPU_GBPS + (size_gb / UM_CPU_WRITE_GBPS["host"] if phase == "cpu_memset"
                                               else pages * UM_FAULT_S)
    return back, size_gb / UM_MIGRATE_TO_GPU_GBPS + (n - 1) * size_gb / UM_GPU_WRITE_GBPS["hbm"]


def um_case(case_id: int, alloc: str, gpu: str, mem: str, where: str, toucher: str, rng: random.Random,
            size: int = UM_SIZE) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One `um --exp interleave` case and its samples: ``where`` (host or hbm) is where
    system memory's first placement is; managed pages end on ``gpu``."""
    after = gpu if alloc == "managed" else mem
    rows = []
    n = 1
    while n <= 256:
        for rep in range(3):
            for phase in ("cpu_memset", "cpu_page_stride"):
                cpu_s, gpu_s = (_jitter(rng, t) for t in um_step(alloc, where, phase, n))
                common = {"case_id": case_id, "experiment": "interleave", "alloc": alloc, "gpu": gpu, "mem": mem,
                          "size_bytes": size, "iterations": n, "rep": rep, "run": -1, "state": "",
                          "first_touch": toucher, "first_placement": mem}
                rows.append({**common, "phase": phase, "preceded_by": "gpu_memset", "bytes": size,
                             "time_s": cpu_s, "bandwidth_GBps": size / cpu_s / 1e9, "placement": "",
                             "app_time_s": math.nan})
                rows.append({**common, "phase": "gpu_memset", "preceded_by": phase, "bytes": size * n,
                             "time_s": gpu_s, "bandwidth_GBps": size * n / gpu_s / 1e9, "placement": after,
                             "app_time_s": cpu_s + gpu_s + 20e-6})
        n *= 2
    burst = {m: sorted(r["time_s"] for r in rows if r["phase"] == "gpu_memset" and r["iterations"] == m)
             for m in (1, 256)}
    case = {"case_id": case_id, "experiment": "interleave", "alloc": alloc, "gpu": gpu, "mem": mem,
            "size_bytes": size, "status": "ok", "reason": "", "verified": 1,
            "gpu_iter_us_n1": burst[1][len(burst[1]) // 2] * 1e6,
            "gpu_iter_us_nmax": burst[256][len(burst[256]) // 2] / 256 * 1e6, "max_iterations": 256,
            "placement": after, "first_touch": toucher, "first_placement": mem}
    return case, rows


def um_tables(topology: Mapping[str, Any], rng: random.Random) -> dict[str, list]:
    gpu = "gpu0"
    hbm = next(f"numa{p['hbm_numa']}" for p in topology["processors"] if p["name"] == gpu)
    series = [("system", "numa0", "host", "cpu"), ("system", hbm, "hbm", "cpu"),
              ("managed", "numa0", "host", "cpu"), ("managed", gpu, "host", "gpu")]
    cases, samples = [], []
    for case_id, (alloc, mem, where, toucher) in enumerate(series):
        case, rows = um_case(case_id, alloc, gpu, mem, where, toucher, rng)
        cases.append(case)
        samples += rows
    return {"um/cases": table(UM_CASES, cases), "um/samples": table(UM_SAMPLES, samples)}


# ---- chase: Figs. 11-12 ----
def chase_ns(topology: Mapping[str, Any], pu: str, mem: str, size: int) -> float:
    """Latency of one load of a random chain over ``size`` bytes: the smallest cache that
    holds it, else memory, blended by the share of the buffer the last cache holds. A GPU's
    L2 holds HBM (its own and a peer's, the peer's at a higher cost), not host memory."""
    r = _role(topology, pu, mem)
    gpu = pu.startswith("gpu")
    memory = (GPU_MEMORY_NS if gpu else CPU_MEMORY_NS)[r]
    levels = list(GPU_CACHES if gpu else CPU_CACHES)
    if gpu and "LPDDR" in r:
        levels = levels[:1]
    if gpu and r.startswith("peer") and len(levels) > 1:
        levels[1] = ("L2", levels[1][1], 300.0, levels[1][3])
    for _, capacity, ns, _ in levels:
        if size <= capacity:
            return ns
    last_capacity, last_ns = levels[-1][1], levels[-1][2]
    held = last_capacity / size
    return memory - (memory - last_ns) * held


def chase_tables(topology: Mapping[str, Any], rng: random.Random) -> dict[str, list]:
    cpus = [p for p in topology["processors"] if p["kind"] == "cpu" and p.get("numa") is not None]
    gpus = [p for p in topology["processors"] if p["kind"] == "gpu"]
    numa = [m["name"] for m in topology["memories"] if m["kind"] in ("host", "hbm")]
    devices = [m["name"] for m in topology["memories"] if m["kind"] == "device"]
    sizes = [4096 * 4 ** i for i in range(10)]          # 4 KiB .. 1 GiB
    cases, samples, caches = [], [], []
    plan = [(p, m, "numa") for p in cpus for m in numa] + [(p, m, "numa") for p in gpus for m in numa]
    plan += [(p, m, "device") for p in gpus for m in devices]
    for proc, mem, alloc in plan:
        pu = proc["name"]
        for size in sizes:
            ns = chase_ns(topology, pu, mem, size)
            case_id = len(cases)
            gpu = pu.startswith("gpu")
            reps = [_jitter(rng, ns, 0.005) for _ in range(3)]
            accesses = 262144 if gpu else 2097152
            row = {"case_id": case_id, "pu": pu, "cpu": -1 if gpu else proc["cpus"][0], "mem": mem, "alloc": alloc,
                   "pattern": "random", "size_bytes": size, "line_bytes": 64, "locality_bytes": size,
                   "huge_pages": 0, "accesses": accesses}
            cases.append({**row, "via": _via(topology, pu, mem), "status": "ok", "reason": "", "reps": 3,
                          "median_ns": sorted(reps)[1], "min_ns": min(reps),
                          "median_cycles": sorted(reps)[1] * 1.98 if gpu else math.nan,
                          "huge_page_fraction": math.nan if alloc == "device" else 0.0, "placement": mem,
                          "placed": 1, "verified": 1})
            samples += [{**row, "rep": i, "time_s": v * accesses * 1e-9, "ns_per_access": v,
                         "cycles_per_access": v * 1.98 if gpu else math.nan} for i, v in enumerate(reps)]
    # Managed memory chased by gpu0, asked on numa0: its pages moved to gpu0 (drawn there, if at all).
    for size in (1 << 30,):
        cases.append({"case_id": len(cases), "pu": "gpu0", "cpu": -1, "mem": "numa0", "alloc": "managed",
                      "pattern": "random", "size_bytes": size, "line_bytes": 64, "locality_bytes": size,
                      "huge_pages": 0, "accesses": 262144, "via": "c2c", "status": "ok", "reason": "", "reps": 3,
                      "median_ns": 500.0, "min_ns": 495.0, "median_cycles": 990.0, "huge_page_fraction": math.nan,
                      "placement": "gpu0", "placed": 0, "verified": 1})
    for proc in cpus:
        caches += [{"pu": proc["name"], "level": level, "bytes": size, "source": source}
                   for level, size, _, source in CPU_CACHES]
    for proc in gpus:
        caches += [{"pu": proc["name"], "level": level, "bytes": size, "source": source}
                   for level, size, _, source in GPU_CACHES]
    return {"chase/cases": table(CHASE_CASES, cases), "chase/samples": table(CHASE_SAMPLES, samples),
            "chase/caches": table(CHASE_CACHES, caches)}


# ---- pingpong: Fig. 13 ----
def agent_ns(topology: Mapping[str, Any], agent: str, mem: str) -> float:
    """One agent's share of a round trip on a flag in ``mem`` (ns), by the memory's role."""
    r = _role(topology, agent, mem)
    if agent.startswith("cpu"):
        return {"local LPDDR": 60.0, "local HBM": 250.0, "device memory": 250.0, "peer LPDDR": 300.0,
                "peer HBM": 450.0, "peer device memory": 450.0}[r]
    return {"local HBM": 300.0, "device memory": 300.0, "local LPDDR": 700.0, "peer LPDDR": 1200.0,
            "peer HBM": 900.0, "peer device memory": 900.0}[r]


def pingpong_case(topology: Mapping[str, Any], row: Mapping[str, Any], rng: random.Random,
                  round_trips: int, managed_at: str | None = None) -> tuple[dict[str, Any], list[float]]:
    """A ping-pong case that runs (``row``: a, b, mem, alloc...) and its round trips (ns):
    each agent's share by the flag's memory role; a managed flag is pulled to the first GPU
    agent (or stays on host memory between CPUs) and moves on every exchange between a CPU
    and a GPU. ``managed_at``: where a managed flag ends, instead."""
    a, b, mem, alloc = row["a"], row["b"], row["mem"], row["alloc"]
    gpus = [x for x in (a, b) if x.startswith("gpu")]
    cpu_side = [x for x in (a, b) if x.startswith("cpu")]
    own = f"numa{cpu_side[0].removeprefix('cpu')}" if cpu_side else mem
    where = (managed_at or (gpus[0] if gpus else (own if mem.startswith("gpu") else mem))) if alloc == "managed" else mem
    rtt = 2 * (agent_ns(topology, a, where) + agent_ns(topology, b, where))
    if alloc == "managed" and gpus and cpu_side:
        rtt = 1.2e6  # the page moves on every exchange
    vias = list(dict.fromkeys(v for v in (_via(topology, a, where), _via(topology, b, where)) if v and v != "local"))
    trips = sorted(_jitter(rng, rtt, 0.05) for _ in range(round_trips))
    q = lambda f: trips[min(len(trips) - 1, int(f * len(trips)))]  # noqa: E731
    return {**row, "via": "+".join(vias) or "local", "round_trips": len(trips), "status": "ok", "reason": "",
            "median_ns": trips[len(trips) // 2], "mean_ns": sum(trips) / len(trips), "min_ns": trips[0],
            "p05_ns": q(0.05), "p95_ns": q(0.95), "p99_ns": q(0.99), "max_ns": trips[-1], "placement": where,
            "placed": int(where == mem), "verified": 1}, trips


def pingpong_tables(topology: Mapping[str, Any], rng: random.Random) -> dict[str, list]:
    agents = [p["name"] for p in topology["processors"] if p["kind"] == "gpu" or p.get("numa") is not None]
    first_core = {p["name"]: p["cpus"] for p in topology["processors"] if p["kind"] == "cpu" and p.get("cpus")}
    hbm = next(f"numa{p['hbm_numa']}" for p in topology["processors"] if p["name"] == "gpu0")
    flags = [("numa0", "numa"), ("numa0", "pinned"), ("numa0", "managed"), (hbm, "numa"), ("gpu0", "device"),
             ("gpu0", "managed")]
    cases, samples = [], []
    for mem, alloc in flags:
        for i, a in enumerate(agents):
            for b in agents[i:]:
                case_id = len(cases)
                cpu_a = first_core[a][0] if a in first_core else -1
                cpu_b = (first_core[b][1] if a == b else first_core[b][0]) if b in first_core else -1
                row = {"case_id": case_id, "a": a, "b": b, "a_cpu": cpu_a, "b_cpu": cpu_b, "mem": mem, "alloc": alloc,
                       "flag_bytes": 1}
                cpu_side = [x for x in (a, b) if x.startswith("cpu")]
                if alloc == "device" and cpu_side:
                    cases.append({**row, "via": "", "round_trips": 0, "status": "skipped",
                                  "reason": "cudaMalloc memory is not mapped for CPU access", "placement": "",
                                  "placed": -1, "verified": 0})
                    continue
                case, trips = pingpong_case(topology, row, rng, 50,
                                            managed_at="gpu0" if len(cpu_side) < 2 else "numa0")
                cases.append(case)
                samples += [{"case_id": case_id, "index": k, "rtt_ns": v} for k, v in enumerate(trips)]
    return {"pingpong/cases": table(PINGPONG_CASES, cases), "pingpong/samples": table(PINGPONG_SAMPLES, samples)}


# ---- gemm: Figs. 15-16, Table III ----
def gemm_tflops(topology: Mapping[str, Any], dtype: str, n: int, a_mem: str, b_mem: str) -> float:
    """A roofline: cuBLAS's achieved rate, or the time to stream A and B as often as the
    tiling re-reads them (A n/512 times, B n/1024 times: the asymmetry of Fig. 15) over
    their paths, whichever is longer, plus a launch."""
    flops = 2.0 * n ** 3
    operand = n * n * ELEMENT[dtype]
    stream = (operand * max(1.0, n / 512) / (GPU_READ_GBPS[_role(topology, "gpu0", a_mem)] * 1e9)
              + operand * max(1.0, n / 1024) / (GPU_READ_GBPS[_role(topology, "gpu0", b_mem)] * 1e9))
    return flops / (max(flops / (GEMM_ACHIEVED[dtype] * 1e12), stream) + 5e-6) / 1e12


def gemm_case(topology: Mapping[str, Any], case_id: int, dtype: str, n: int, a: tuple[str, str],
              b: tuple[str, str], rng: random.Random, *, found: tuple[str, str] | None = None, gpu: int = 0,
              c: tuple[str, str] | None = None, via: tuple[str, str] | None = None, reason: str = "") -> dict[str, Any]:
    """One /gemm/cases row: A and B as (memory, allocator), ``found`` where their pages were
    (managed ones migrate), the roofline's TFLOP/s; ``reason``: a skipped case."""
    found = found or (a[0], b[0])
    c = c or (f"gpu{gpu}", "device")
    via = via or (_via(topology, f"gpu{gpu}", a[0]), _via(topology, f"gpu{gpu}", b[0]))
    flops = 2 * n ** 3
    row = {"case_id": case_id, "gpu": gpu, "dtype": dtype, "m": n, "n": n, "k": n, "a_mem": a[0], "a_alloc": a[1],
           "b_mem": b[0], "b_alloc": b[1], "c_mem": c[0], "c_alloc": c[1], "via": via[0], "b_via": via[1],
           "peak_TFLOPs": GEMM_PEAK[dtype], "operand_bytes": 2 * n * n * ELEMENT[dtype], "flops": flops,
           "cublas_version": 120300, "calls_per_rep": 1}
    if reason:
        return {**row, "status": "skipped", "reason": reason, "reps": 0, "median_TFLOPs": math.nan,
                "best_TFLOPs": math.nan, "min_TFLOPs": math.nan, "fraction_of_peak": math.nan, "placement": "",
                "b_placement": "", "placed": -1, "verified": 0}
    value = gemm_tflops(topology, dtype, n, *found)
    reps = sorted(_jitter(rng, value, 0.01) for _ in range(3))
    return {**row, "status": "ok", "reason": "", "reps": 3, "median_TFLOPs": reps[1], "best_TFLOPs": reps[2],
            "min_TFLOPs": reps[0], "fraction_of_peak": reps[1] / GEMM_PEAK[dtype], "placement": found[0],
            "b_placement": found[1], "placed": int(found == (a[0], b[0])), "verified": 1}


def gemm_tables(topology: Mapping[str, Any], rng: random.Random) -> dict[str, list]:
    numa = [m["name"] for m in topology["memories"] if m["kind"] in ("host", "hbm")]
    places = [(m, "numa") for m in numa] + [("gpu0", "device")]
    cases, samples = [], []

    def add(dtype: str, n: int, a: tuple[str, str], b: tuple[str, str], found: tuple[str, str] | None = None) -> None:
        row = gemm_case(topology, len(cases), dtype, n, a, b, rng, found=found)
        cases.append(row)
        samples.extend({"case_id": row["case_id"], "rep": i, "time_s": row["flops"] / (v * 1e12), "tflops": v}
                       for i, v in enumerate((row["min_TFLOPs"], row["median_TFLOPs"], row["best_TFLOPs"])))

    for dtype in ("fp16", "tf32", "fp32", "fp64"):
        largest = int(math.sqrt((4 << 30) / ELEMENT[dtype])) // 8 * 8     # 4 GiB per matrix, a multiple of 8
        for a in places:
            for b in places:
                add(dtype, largest, a, b)
        for n in (1024, 2048, 4096, 8192, 16384):
            for place in places:
                add(dtype, n, place, place)
    # Managed A and B asked on numa0; their pages migrated to gpu0 (so drawn under gpu0).
    for n in (1024, 4096, 16384):
        add("fp16", n, ("numa0", "managed"), ("numa0", "managed"), found=("gpu0", "gpu0"))
    return {"gemm/cases": table(GEMM_CASES, cases), "gemm/samples": table(GEMM_SAMPLES, samples)}


# ---- llm: Fig. 17 ----
def llama2_params(model: str) -> int:
    c = LLAMA2[model]
    layer = 4 * c["hidden"] ** 2 + 3 * c["hidden"] * c["intermediate"] + 2 * c["hidden"]
    return c["layers"] * layer + 2 * c["vocab"] * c["hidden"] + c["hidden"]


def llm_tables(topology: Mapping[str, Any], rng: random.Random) -> dict[str, list]:
    placements = [("default", "pytorch", "gpu0"), ("hbm", "device", "gpu0"), ("numa:numa4", "numa", "numa4"),
                  ("host", "numa", "numa0"), ("host-remote", "numa", "numa1"), ("numa:numa12", "numa", "numa12"),
                  ("peer", "device", "gpu1")]
    cases, samples = [], []
    for model in LLAMA2:
        params = llama2_params(model)
        weights = params * 2
        for name, alloc, mem in placements:
            gbps = GPU_READ_GBPS[_role(topology, "gpu0", mem)]
            bound = gbps * 1e9 / weights
            rate = 1 / (weights / (gbps * 1e9) + DECODE_OVERHEAD_S * (0.95 if name == "default" else 1.0))
            reps = sorted(_jitter(rng, rate, 0.01) for _ in range(3))
            case_id = len(cases)
            cases.append({"case_id": case_id, "model": model, "params": params, "weight_bytes": weights,
                          "dtype": "fp16", "placement": name, "weight_alloc": alloc, "weight_mem": mem,
                          "weight_placement": mem, "gpu": 0, "batch": 1, "prompt_tokens": 1, "new_tokens": 100,
                          "cuda_graph": 1, "status": "ok", "reason": "", "reps": 3, "median_tokens_per_s": reps[1],
                          "best_tokens_per_s": reps[2], "path_GBps": gbps, "path_source": "measured",
                          "bound_tokens_per_s": bound, "fraction_of_bound": reps[1] / bound, "verified": 1,
                          "decode_mode": "graph", "decode_fallback": "", "path_case": "", "prompt": "bos",
                          "torch_allocator": "caching" if name == "default" else "pluggable",
                          "peak_small_bytes": 140_000_000 if model == "llama-2-7b" else 175_000_000,
                          "peak_large_bytes": weights + 700_000_000})
            samples += [{"case_id": case_id, "rep": i, "time_s": 99 / v, "tokens_per_s": v} for i, v in enumerate(reps)]
    return {"llm/cases": table(LLM_CASES, cases), "llm/samples": table(LLM_SAMPLES, samples)}


FAMILIES = {
    "um": (um_tables, "mempath um --exp interleave --mem sweep --size 256MiB --iters 256 --reps 3"),
    "chase": (chase_tables, "mempath chase --all --reps 3"),
    "pingpong": (pingpong_tables, "mempath pingpong --mem numa0,numa4,gpu0 --round-trips 50"),
    "gemm": (gemm_tables, "mempath gemm --all --ab independent --matrix-bytes 4GiB; "
                          "mempath gemm --all --size 1024,2048,4096,8192,16384"),
    "llm": (llm_tables, "mempath llm --model llama-2-7b --dtype fp16 --prompt-tokens empty "
                        "--new-tokens 100 --placement default,hbm,numa:numa4,host,host-remote,numa:numa12,peer; "
                        "the same with --model llama-2-13b"),
}


def write(folder: Path, topology: dict) -> list[Path]:
    """One synthetic file per family (um, chase, pingpong, gemm, llm) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for family, (make, command) in FAMILIES.items():
        rng = random.Random(f"synth_apps {family}")
        path = folder / f"{family}.h5"
        write_run(path, [], topology=topology, bw=False, attrs=_attrs(topology, command),
                  extra=make(topology, rng))
        paths.append(path)
    return paths


if __name__ == "__main__":  # python tests/python/synth_apps.py OUT: the files, for a look
    import sys
    from h5fixtures import topology as reference
    print("\n".join(str(p) for p in write(Path(sys.argv[1]), reference("gh200_quad"))))
