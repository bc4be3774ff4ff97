"""The synthetic paper set, generated from the steps themselves (issue #32): for each step of
reframe_checks/paper_set.py that a quad GH200 runs, one file named as the step's ``output``
(bw_cpu.h5, gemm_placement.h5, ... as slurm/paper.sbatch writes them) with exactly the cases
the step's command would write, each filled from the synth modules' model of a GH200 node
(synth_bandwidth, synth_apps, synth_scaleout: values that are NOT measurements; root
attribute synthetic=1).

Where the cases come from:
- ``mempath`` steps: the binary's own plan, ``build/mempath ARGS --from tests/fixtures/gh200_quad``
  (docs/cli.md, "The PLAN lines of --from"): one PLAN line per case, skipped ones with the
  binary's reason. What a plan leaves to the run is filled as the run would: chase's
  ``size=sweep`` is powers of two from 4 KiB to max(1 GiB, 4 x the largest cache)
  (chase_command.cpp sizes_of, chase_plan.hpp default_max_size); a GEMM whose matrices do
  not fit in their memory is skipped with gemm_command.cpp's reason.
  ``mempath llm``'s plan gives its cases; the decode's lengths (``--new-tokens``,
  ``--prompt-tokens``, ``--reps``) are read from the step's arguments (``_llm_lengths``) and
  the models' shapes from src/core/llm_models.def, the table the binary compiles.
- ``mempath-mpi`` steps (no --from plan): one small function each reads the step's
  arguments (``_nccl_cases``, ``_mpi_bw_cases``).
- ``nodes`` steps need a job of several nodes: written for SYNTHETIC_NODES (the node counts
  the tests used before), one file holding every count's rows, which the figures read
  alike (they group by the ``nodes`` column, not by file).

A step whose arguments change changes this set; nothing here names a placement, a dtype or
a size of a step. ``write(folder)`` -> the paths written.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from h5fixtures import table, topology as fixture_topology, write_run  # noqa: I001 (repo root on sys.path)
import synth_apps as apps
import synth_bandwidth as sbw
import synth_scaleout as scale
from analysis.model.roles import role
from analysis.results import deffile
from analysis.results.h5writer import write_result
from reframe_checks import paper_set  # a module of the repository root (standard library only)

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "gh200_quad"
TOPOLOGY = "gh200_quad"          # tests/python/data/topology_gh200_quad.json: the same node
GPUS = 4
#: The node counts of the multi-node steps (one node cannot run them; the tests' choice).
SYNTHETIC_NODES = {"mpi_bw": (2,), "nccl": (2, 4, 8)}
PING_ROUND_TRIPS = 50


def mempath_binary() -> Path:
    return Path(os.environ.get("MEMPATH_BIN", REPO / "build" / "mempath"))


def steps() -> list[Any]:
    """The steps of a quad GH200, the multi-node ones included (at SYNTHETIC_NODES)."""
    return paper_set.runnable(GPUS, 2)


# ---- mempath steps: the binary's plan ----
def plan(args: Sequence[str], binary: Path | None = None) -> list[dict[str, str]]:
    """The PLAN lines of `mempath ARGS --from tests/fixtures/gh200_quad`, as dicts (``-``: empty)."""
    out = subprocess.run([str(binary or mempath_binary()), *args, "--from", str(FIXTURE)],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("PLAN "):
            fields = dict(t.split("=", 1) for t in shlex.split(line)[2:])
            rows.append({k: "" if v == "-" else v for k, v in fields.items()})
    return rows


def _skip(p: Mapping[str, str]) -> str:
    return p.get("reason", "") if p["status"] == "skipped" else ""


def _bw_rows(node: sbw.Node, planned: list[dict[str, str]]) -> list[dict[str, Any]]:
    """/bw/cases of a `bw` plan: read and write at the model's rate of the path (managed
    pages where the model puts them), CPU threads and GPU blocks saturating as in
    synth_bandwidth; copies as the harmonic read+write; `noise` with the partner's reader."""
    rows = []
    for p in planned:
        op, pu, mem, dst, alloc = p["op"], p["pu"], p["mem"], p["dst"], p["alloc"]
        kind = node.procs[pu]["kind"]
        threads, blocks = int(p["threads"]), int(p.get("blocks") or -1)
        dst_alloc = node.default_alloc(pu, dst) if op == "copy" else ""  # bw_plan.cpp make_case
        kw: dict[str, Any] = dict(dst=dst, dst_alloc=dst_alloc, threads=threads, kernel=p["kernel"])
        why = _skip(p)
        if why:
            row = sbw._case(node, op, pu, mem, alloc, reason=why, **kw)
        else:
            if op == "copy":
                full = 2 * node.copy_rate(pu, mem, dst)
            else:
                placed = sbw._managed_placement(node, pu, mem) if alloc == "managed" else mem
                full = node.alone(pu, placed, op) * (1.005 if placed != mem else
                                                    0.97 if alloc != node.default_alloc(pu, mem) else 1.0)
                kw["placement"] = placed
            gbps = full
            if kind == "cpu":
                gbps = min(full, full * threads / ((0.4 if op == "copy" else 0.45) * node.cores(pu)))
            elif p["kernel"] == "block":
                gbps = min(full, sbw.BLOCK_KERNEL_GBPS)
            elif blocks > 0:
                most = sbw.BLOCKS_PER_SM * node.sm_count(pu)
                gbps = min(full, full * blocks / (most / 4))
            row = sbw._case(node, op, pu, mem, alloc, gbps=gbps, blocks=blocks, **kw)
        size = int(p["size"])
        row.update(size_bytes=size, bytes=size * (2 if op == "copy" else 1), via=p["via"])
        if p.get("noise"):
            row = _noise(node, row, p["noise"], why)
        rows.append(row)
    return rows


def _noise(node: sbw.Node, row: dict[str, Any], noise: str, why: str) -> dict[str, Any]:
    """A case of `--noise partner`: its share under contention (synth_bandwidth.CONTENTION)
    and what the partner's reader (the plan's READER:MEM) gets."""
    row["noise"] = "partner" if noise == "partner" else noise
    if why or noise == "partner":
        return row
    reader, noise_mem = noise.split(":")
    pu, mem, op, kind = row["pu"], row["mem"], row["op"], row["pu_kind"]
    share, reader_gbps = sbw.CONTENTION.get((kind, role(node.topology, pu, mem), op),
                                            (None, sbw.NOISE_READER * node.peak(reader, noise_mem)))
    gbps = share * node.peak(pu, mem) * sbw.superchip_factor(pu) if share else row["median_GBps"]
    if noise_mem == mem and node.peaks.memory(mem).gbps:
        reader_gbps = min(reader_gbps, max(0.0, 0.95 * node.peaks.memory(mem).gbps - gbps))
    seconds = sbw.REPS * row["size_bytes"] / (gbps * 1e9)
    moved = int(reader_gbps * 1e9 * seconds)
    row.update(median_GBps=gbps, min_GBps=0.97 * gbps, max_GBps=1.02 * gbps, noise_size_bytes=sbw.NOISE_SIZE,
               noise_threads=node.cores(reader) - 1 if node.procs[reader]["kind"] == "cpu"
               else node.full_grid(reader)[1], noise_bytes=moved, noise_seconds=seconds,
               noise_GBps=moved / seconds / 1e9)
    return row


def bw_tables(topology: Mapping[str, Any], planned: list[dict[str, str]], rng: random.Random) -> dict[str, list]:
    rows = [{"case_id": i, **r} for i, r in enumerate(_bw_rows(sbw.Node(topology), planned))]
    return {"bw/cases": table({**sbw.BW_CASE_COLUMNS, **sbw.NOISE_CASE_COLUMNS}, rows),
            "bw/samples": table({**sbw.BW_SAMPLE_COLUMNS, "blocks": int}, sbw.samples(rows))}


def allocmatrix_tables(topology: Mapping[str, Any], planned: list[dict[str, str]],
                       rng: random.Random) -> dict[str, list]:
    node = sbw.Node(topology)
    cases = []
    for p in planned:
        device = p["gpu"]
        host = next((m for m in (p["src_mem"], p["dst_mem"]) if m != device), device)
        row = sbw.allocmatrix_row(node, device, host, p["src_alloc"], p["dst_alloc"], p["src_mem"], p["dst_mem"],
                                  reason=_skip(p))
        cases.append({"case_id": len(cases), **row, "size_bytes": int(p["size"])})
    reps = [{**{k: c[k] for k in sbw.ALLOC_SAMPLE_COLUMNS if k in c}, "rep": rep,
             "bandwidth_GBps": gbps, "time_s": c["size_bytes"] / gbps / 1e9}
            for c in cases if c["status"] == "ok"
            for rep, gbps in enumerate((c["min_GBps"], c["median_GBps"], c["max_GBps"]))]
    return {"allocmatrix/cases": table(sbw.ALLOC_CASE_COLUMNS, cases),
            "allocmatrix/samples": table(sbw.ALLOC_SAMPLE_COLUMNS, reps)}


def um_tables(topology: Mapping[str, Any], planned: list[dict[str, str]], rng: random.Random) -> dict[str, list]:
    cases, samples = [], []
    for p in planned:
        where = "hbm" if "HBM" in role(topology, p["gpu"], p["mem"]) else "host"
        case, rows = apps.um_case(len(cases), p["alloc"], p["gpu"], p["mem"], where, p["first_touch"], rng,
                                  size=int(p["size"]))
        cases.append(case)
        samples += rows
    return {"um/cases": table(apps.UM_CASES, cases), "um/samples": table(apps.UM_SAMPLES, samples)}


def chase_sweep(pu: str) -> list[int]:
    """`--size sweep` (the default): powers of two from 4 KiB to the larger of 1 GiB and 4 x
    the largest cache (chase_plan.hpp default_max_size), the model's caches."""
    largest = max(c[1] for c in (apps.GPU_CACHES if pu.startswith("gpu") else apps.CPU_CACHES))
    top = max(1 << 30, 1 << (4 * largest - 1).bit_length())
    return [1 << e for e in range(12, top.bit_length())]


def chase_tables(topology: Mapping[str, Any], planned: list[dict[str, str]], rng: random.Random) -> dict[str, list]:
    cases, samples, caches = [], [], []
    for p in planned:
        pu, mem, alloc = p["pu"], p["mem"], p["alloc"]
        gpu = pu.startswith("gpu")
        sizes = chase_sweep(pu) if p["size"] == "sweep" else [int(p["size"])]
        for size in sizes:
            ns = apps.chase_ns(topology, pu, mem, size)
            reps = sorted(apps._jitter(rng, ns, 0.005) for _ in range(3))
            accesses = 262144 if gpu else 2097152
            row = {"case_id": len(cases), "pu": pu, "cpu": int(p["cpu"]), "mem": mem, "alloc": alloc,
                   "pattern": p["pattern"], "size_bytes": size, "line_bytes": int(p["line"]),
                   "locality_bytes": int(p["locality"] or size), "huge_pages": int(p["huge"]), "accesses": accesses}
            why = _skip(p)
            cases.append({**row, "via": p["via"], "status": "skipped" if why else "ok", "reason": why,
                          "reps": 0 if why else 3, "median_ns": math.nan if why else reps[1],
                          "min_ns": math.nan if why else reps[0],
                          "median_cycles": reps[1] * 1.98 if gpu and not why else math.nan,
                          "huge_page_fraction": math.nan if alloc in ("device", "managed") else 0.0,
                          "placement": "" if why else mem, "placed": -1 if why else 1, "verified": int(not why)})
            if not why:
                samples += [{**row, "rep": i, "time_s": v * accesses * 1e-9, "ns_per_access": v,
                             "cycles_per_access": v * 1.98 if gpu else math.nan} for i, v in enumerate(reps)]
    for pu in dict.fromkeys(p["pu"] for p in planned):
        levels = apps.GPU_CACHES if pu.startswith("gpu") else apps.CPU_CACHES
        caches += [{"pu": pu, "level": level, "bytes": size, "source": source} for level, size, _, source in levels]
    return {"chase/cases": table(apps.CHASE_CASES, cases), "chase/samples": table(apps.CHASE_SAMPLES, samples),
            "chase/caches": table(apps.CHASE_CACHES, caches)}


def pingpong_tables(topology: Mapping[str, Any], planned: list[dict[str, str]],
                    rng: random.Random) -> dict[str, list]:
    cases, samples = [], []
    for p in planned:
        a, b, mem, alloc = p["a"], p["b"], p["mem"], p["alloc"]
        row = {"case_id": len(cases), "a": a, "b": b, "a_cpu": int(p["a_cpu"]), "b_cpu": int(p["b_cpu"]),
               "mem": mem, "alloc": alloc, "flag_bytes": 1}
        why = _skip(p)
        if why:
            cases.append({**row, "via": p["via"], "round_trips": 0, "status": "skipped", "reason": why,
                          "placement": "", "placed": -1, "verified": 0})
            continue
        case, trips = apps.pingpong_case(topology, row, rng, PING_ROUND_TRIPS)
        cases.append(case)
        samples += [{"case_id": row["case_id"], "index": k, "rtt_ns": v} for k, v in enumerate(trips)]
    return {"pingpong/cases": table(apps.PINGPONG_CASES, cases),
            "pingpong/samples": table(apps.PINGPONG_SAMPLES, samples)}


def gemm_tables(topology: Mapping[str, Any], planned: list[dict[str, str]], rng: random.Random) -> dict[str, list]:
    free = {m["name"]: int(m.get("bytes") or 0) for m in topology["memories"]}
    cases, samples = [], []
    for p in planned:
        n, dtype = int(p["n"]), p["dtype"]
        gpu = int(p["gpu"].removeprefix("gpu"))
        a, b = (p["mem"], p["alloc"]), (p["b_mem"], p["b_alloc"])
        why = _skip(p)
        matrix = n * n * apps.ELEMENT[dtype]
        on: dict[str, list[str]] = {}
        for name, where in (("A", a[0]), ("B", b[0]), ("C", p["c_mem"])):
            on.setdefault(where, []).append(name)
        for where, names in sorted(on.items()):   # gemm_command.cpp run(): each memory's matrices fit
            if not why and free.get(where) and len(names) * matrix > free[where]:
                why = (f"{' + '.join(names)} ({matrix >> 20}MiB{' each) do' if len(names) > 1 else ') does'} "
                       f"not fit on {where} ({free[where] >> 20}MiB free)")
        row = apps.gemm_case(topology, len(cases), dtype, n, a, b, rng, gpu=gpu, c=(p["c_mem"], p["c_alloc"]),
                             via=(p["via"], p["b_via"]), reason=why)
        cases.append(row)
        if not why:
            samples += [{"case_id": row["case_id"], "rep": i, "time_s": row["flops"] / (v * 1e12), "tflops": v}
                        for i, v in enumerate((row["min_TFLOPs"], row["median_TFLOPs"], row["best_TFLOPs"]))]
    return {"gemm/cases": table(apps.GEMM_CASES, cases), "gemm/samples": table(apps.GEMM_SAMPLES, samples)}


PLANNED = {"bw": bw_tables, "allocmatrix": allocmatrix_tables, "um": um_tables, "chase": chase_tables,
           "pingpong": pingpong_tables, "gemm": gemm_tables}


# ---- llm steps: the plan's cases, the models' shapes of llm_models.def ----
#: Bytes of an element of each weight type `mempath llm --dtype` takes.
LLM_ELEMENT = {"fp16": 2, "bf16": 2}


@lru_cache(maxsize=None)
def llm_models() -> dict[str, dict[str, int]]:
    """The rows of src/core/llm_models.def (the shapes `mempath llm` builds), by name."""
    names = ("hidden", "layers", "heads", "kv_heads", "intermediate", "vocab", "tied", "bos")
    return {deffile.literal(f[0]): dict(zip(names, map(int, f[1:])))
            for _, f in deffile.rows(REPO / "src" / "core" / "llm_models.def", {"LLM_MODEL": 9})}


def llm_sizes(model: str, element: int) -> tuple[int, int, int]:
    """(params, bytes a decode step reads, bytes of a layer) of a model, as core/llm_model.cpp
    counts them (llm_params, llm_step_weight_bytes): an untied head's embedding is not read."""
    m = llm_models()[model]
    h, inter, vocab = m["hidden"], m["intermediate"], m["vocab"]
    kv = m["kv_heads"] * (h // m["heads"])
    layer = (h + 2 * kv) * h + h * h + 3 * inter * h + 2 * h
    params = m["layers"] * layer + h + vocab * h * (1 if m["tied"] else 2)
    return params, params * element - (0 if m["tied"] else vocab * h * element), layer * element


def _llm_lengths(args: Sequence[str]) -> argparse.Namespace:
    """`--new-tokens` (default 64), `--prompt-tokens` (default 128; `empty`: the BOS token
    alone) and `--reps` (default 3) of a `mempath llm` step (`mempath llm --help`)."""
    p = argparse.ArgumentParser()
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", default="128")
    p.add_argument("--reps", type=int, default=3)
    o, _ = p.parse_known_args(args)
    o.prompt = "empty" if o.prompt_tokens == "empty" else "random"
    o.prompt_n = 1 if o.prompt_tokens == "empty" else int(o.prompt_tokens)
    return o


def llm_tables(topology: Mapping[str, Any], planned: list[dict[str, str]], rng: random.Random,
               args: Sequence[str]) -> dict[str, list]:
    """/llm/cases and /llm/samples of an `llm` plan, with the columns src/apps/llm_command.cpp
    writes: each case decoding at the model's read rate of its weights' memory (the resident
    layers' from HBM, the offloaded ones' over their link) plus a per-token overhead."""
    o = _llm_lengths(args)
    cases, samples = [], []
    for p in planned:
        element = LLM_ELEMENT[p["dtype"]]
        params, read, layer = llm_sizes(p["model"], element)
        gpu, way, why = p["gpu"], p.get("way", ""), _skip(p)
        layers = int(p.get("offload_layers") or 0)
        offloaded = bool(way) and layers > 0
        hbm = apps.GPU_READ_GBPS[role(topology, gpu, gpu)]
        row = {"case_id": len(cases), "model": p["model"], "params": params, "weight_bytes": params * element,
               "dtype": p["dtype"], "placement": "offload" if way else p["placement"], "way": way,
               "weight_alloc": "pytorch" if p["placement"] == "default" else p["alloc"], "weight_mem": p["mem"],
               "offload_layers": layers, "offload_bytes": layers * layer,
               "offload_alloc": p.get("offload_alloc", "") if offloaded else "",
               "offload_mem": p.get("src_mem", "") if offloaded else "",
               "kv_alloc": "device" if p["kv_mem"] == gpu else "pinned", "kv_mem": p["kv_mem"], "ring_slots": 0,
               "gpu": int(gpu.removeprefix("gpu")), "batch": 1, "prompt_tokens": o.prompt_n,
               "new_tokens": o.new_tokens, "prompt": o.prompt, "status": "skipped" if why else "ok", "reason": why,
               "reps": 0, "path_source": "", "verified": 0, "path_case": "",
               "torch_allocator": "caching" if p["placement"] == "default" or way == "vllm" else "",
               "peak_small_bytes": -1, "peak_large_bytes": -1, "timed_tokens": 0, "weight_read_bytes": read,
               "tokens_checked": 0, "tokens_equal": 0, "near_ties": 0, "tokens_wrong": 0}
        cases.append(row)
        if why:
            continue
        moved = layers * layer if offloaded else 0
        off = apps.GPU_READ_GBPS[role(topology, gpu, row["offload_mem"])] if offloaded else hbm
        on = apps.GPU_READ_GBPS[role(topology, gpu, p["mem"] or gpu)] if not way else hbm
        resident, far = (read - moved) / (on * 1e9), moved / (off * 1e9)
        bound_s = max(resident, far) if way == "streamed" else resident + far
        rate = 1 / (bound_s + apps.DECODE_OVERHEAD_S * (0.95 if p["placement"] == "default" else 1.0))
        reps = sorted(apps._jitter(rng, rate, 0.01) for _ in range(o.reps))
        timed = o.new_tokens - 1
        row.update(weight_placement=p["mem"], cuda_graph=1, reps=len(reps), median_tokens_per_s=reps[len(reps) // 2],
                   best_tokens_per_s=reps[-1], path_GBps=on, path_source="measured", hbm_GBps=hbm,
                   offload_GBps=off if offloaded else math.nan, kv_GBps=hbm, bound_tokens_per_s=1 / bound_s,
                   fraction_of_bound=reps[len(reps) // 2] * bound_s, verified=1, decode_mode="graph",
                   peak_small_bytes=140_000_000, peak_large_bytes=params * element + 700_000_000,
                   timed_tokens=timed, tokens_checked=timed, tokens_equal=timed)
        samples += [{"case_id": row["case_id"], "rep": i, "time_s": timed / v, "tokens_per_s": v}
                    for i, v in enumerate(reps)]
    return {"llm/cases": table(apps.LLM_CASES, cases), "llm/samples": table(apps.LLM_SAMPLES, samples)}


# ---- mempath-mpi steps: their arguments (src/mpi/nccl_bench.cpp, src/mpi/mpi_bw.cpp) ----
def _size(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "B": 1}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    return int(text)


def _powers(lo: int, hi: int) -> list[int]:
    """power_of_two_sizes: the powers of two from the first >= lo to the last <= hi."""
    return [1 << e for e in range((lo - 1).bit_length(), hi.bit_length()) if lo <= 1 << e <= hi]


def _nccl_cases(args: Sequence[str], ranks: int) -> list[tuple[str, str, int, int]]:
    """(placement, collective, size_bytes, rank_bytes): `--placement` (default device) x
    `--coll` (default allreduce,allgather) x the sizes of `--paper-sizes` (all-reduce 4 GiB,
    all-gather 16 MiB a rank), `--size-per-rank`, or the sweep `--min-size` (1 KiB) ..
    `--max-size` (1 GiB) (core/scaleout_plan.cpp nccl_cases)."""
    p = argparse.ArgumentParser()
    p.add_argument("--placement", default="device")
    p.add_argument("--coll", default="allreduce,allgather")
    p.add_argument("--paper-sizes", action="store_true")
    p.add_argument("--size-per-rank", type=_size)
    p.add_argument("--min-size", type=_size, default=1 << 10)
    p.add_argument("--max-size", type=_size, default=1 << 30)
    o, _ = p.parse_known_args(args)
    out = []
    for placement in o.placement.split(","):
        for coll in o.coll.split(","):
            if o.paper_sizes:
                per_rank = [(4 << 30) if coll == "allreduce" else (16 << 20)]
            elif o.size_per_rank:
                per_rank = [o.size_per_rank]
            else:
                per_rank = [s if coll == "allreduce" else s // ranks for s in _powers(max(o.min_size, 4 * ranks), o.max_size)]
            for rank_bytes in per_rank:
                rank_bytes -= rank_bytes % 4
                if rank_bytes:
                    out.append((placement, coll, rank_bytes if coll == "allreduce" else rank_bytes * ranks, rank_bytes))
    return out


def write_nccl(path: Path, topology: Mapping[str, Any], step: Any, node_counts: Sequence[int]) -> Path:
    rows = []
    for nodes in node_counts:
        ranks = paper_set.ranks(step, GPUS, nodes)
        for placement, coll, size, rank_bytes in _nccl_cases(step.args[1:], ranks):
            alloc, mem, via = scale._placement(topology, placement)
            us = scale.nccl_time_us(coll, placement, nodes, size)
            algbw = size / (us * 1e-6) / 1e9
            rows.append({"case_id": len(rows), "collective": coll, "placement": placement, "alloc": alloc,
                         "ranks": ranks, "nodes": nodes, "size_bytes": size, "iters": scale.NCCL_ITERS,
                         "status": "ok", "reason": "", "time_us": us, "algbw_GBps": algbw,
                         "busbw_GBps": algbw * scale.busbw_factor(coll, ranks), "verified": 1, "mem": mem,
                         "via": via, "rank_bytes": rank_bytes})
    ranks = paper_set.ranks(step, GPUS, max(node_counts))
    root = scale._root(topology, _command(step, max(node_counts)),
                       {"mpi_ranks": ranks, "mpi_nodes": max(node_counts), "nccl_version": 21903})
    return write_result(path, root, {"nccl/cases": table(scale.NCCL_CASES, rows)})


def _mpi_bw_cases(args: Sequence[str], pairs: int) -> list[tuple[str, str, int, int]]:
    """(mode, alloc, node_bytes, rank_bytes): `--mode` (default uni,bi) x `--alloc` (default
    numa) x the node sizes `--min-size` (1 B) .. `--max-size` (1 GiB) split among the node's
    pairs with `--split` (scaleout_plan.cpp split_node_sizes), else each rank's size."""
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="uni,bi")
    p.add_argument("--alloc", default="numa")
    p.add_argument("--split", action="store_true")
    p.add_argument("--min-size", type=_size, default=1)
    p.add_argument("--max-size", type=_size, default=1 << 30)
    o, _ = p.parse_known_args(args)
    sizes = _powers(max(o.min_size, pairs), o.max_size) if o.split else _powers(o.min_size, o.max_size)
    return [(mode, alloc, size if o.split else size * pairs, size // pairs if o.split else size)
            for mode in o.mode.split(",") for alloc in o.alloc.split(",") for size in sizes]


def write_mpi_bw(path: Path, topology: Mapping[str, Any], step: Any, node_counts: Sequence[int]) -> Path:
    cases, samples, ranks_rows = [], [], []
    rng = np.random.default_rng(14)
    nodes = max(node_counts)
    ppn = paper_set.ranks(step, GPUS, nodes) // nodes
    for mode, alloc, node_bytes, size in _mpi_bw_cases(step.args[1:], ppn):
        gbps = scale.mpi_gbps(mode, ppn, node_bytes) * (0.99 if alloc == "device" else 1.0)
        windows = scale._windows(size)
        moved = size * scale.WINDOW * windows * ppn * (2 if mode == "bi" else 1)
        noise = rng.normal(0, 0.01, scale.REPS)
        reps = gbps * (1 + noise - np.median(noise))
        case_id = len(cases)
        cases.append({"case_id": case_id, "mode": mode, "alloc": alloc, "mem": "gpu" if alloc == "device" else "numa",
                      "ppn": ppn, "pairs": ppn, "size_bytes": size, "window": scale.WINDOW, "windows": windows,
                      "status": "ok", "reason": "", "reps": scale.REPS, "median_GBps": float(np.median(reps)),
                      "min_GBps": float(reps.min()), "max_GBps": float(reps.max()), "same_host": 0,
                      "verified": int(alloc != "device"), "split": int("--split" in step.args),
                      "node_bytes": node_bytes})
        samples += [{"case_id": case_id, "rep": k, "mode": mode, "alloc": alloc, "ppn": ppn, "size_bytes": size,
                     "bytes": moved, "time_s": moved / (g * 1e9), "bandwidth_GBps": float(g), "node_bytes": node_bytes}
                    for k, g in enumerate(reps)]
    numas = scale._host_numas(topology)
    ranks_rows = [{"rank": n * ppn + local, "host": f"nid00000{n + 1}", "node": n, "local": local,
                   "numa": numas[local % len(numas)], "cpus": f"{72 * local}-{72 * local + 71}"}
                  for n in range(nodes) for local in range(ppn)]
    root = scale._root(topology, _command(step, nodes), {"mpi_ranks": nodes * ppn, "mpi_nodes": nodes,
                                                         "mpi_library": "synthetic (Cray MPICH 8.1.28 modelled)"})
    return write_result(path, root, {"mpi_bw/cases": table(scale.MPI_CASES, cases),
                                     "mpi_bw/samples": table(scale.MPI_SAMPLES, samples),
                                     "mpi_bw/ranks": table(scale.MPI_RANKS, ranks_rows)})


# ---- the set ----
def _command(step: Any, nodes: int = 1) -> str:
    """The command line as slurm/paper.sbatch runs the step."""
    args = shlex.join([*step.args, "--output", step.output])
    ranks = paper_set.ranks(step, GPUS, nodes)
    if step.program == "mempath-mpi":
        return f"srun -N {nodes} -n {ranks} mempath-mpi {args}"
    if step.subcommand == "llm":
        return f"mempath {args} --referee python3"
    return f"mempath {args}"


@lru_cache(maxsize=None)
def _plan_cached(args: tuple[str, ...], binary: str) -> tuple[dict[str, str], ...]:
    return tuple(plan(args, Path(binary)))


def write_step(folder: Path, step: Any, topology: Mapping[str, Any], binary: Path | None = None) -> Path:
    """The synthetic file of one step, ``folder / step.output``."""
    path = folder / step.output
    if step.program == "mempath-mpi":
        counts = SYNTHETIC_NODES[step.family] if step.needs == "nodes" else (1,)
        writer = write_nccl if step.family == "nccl" else write_mpi_bw
        return writer(path, topology, step, counts)
    rng = random.Random(f"synth_paper_set {step.check}")
    attrs = apps._attrs(topology, _command(step), arch="aarch64")
    planned = [dict(p) for p in _plan_cached(tuple(step.args), str(binary or mempath_binary()))]
    if step.subcommand == "llm":   # the plan's cases, the decode's lengths from the arguments
        tables = llm_tables(topology, planned, rng, step.args)
    else:
        tables = PLANNED[step.subcommand](topology, planned, rng)
    return write_run(path, [], topology=topology, bw=False, attrs=attrs, extra=tables)


def write(folder: Path, binary: Path | None = None, only: Sequence[Any] | None = None) -> list[Path]:
    """Every step's synthetic file of a quad GH200 in ``folder`` (``only``: those steps)."""
    folder.mkdir(parents=True, exist_ok=True)
    topology = fixture_topology(TOPOLOGY)
    return [write_step(folder, s, topology, binary) for s in (only if only is not None else steps())]


if __name__ == "__main__":  # python tests/python/synth_paper_set.py OUT: the files, for a look
    print("\n".join(str(p) for p in write(Path(sys.argv[1]))))
