"""Synthetic scale-out runs of quad-GH200 nodes for the paper's Figs. 14, 18 and 19: one
`mempath-mpi bw --split` file and one `mempath-mpi nccl` file (root attribute synthetic=1),
their tables exactly as src/mpi/mpi_bw.cpp and src/mpi/nccl_bench.cpp write them
(docs/schema.md, /mpi_bw and /nccl, with the columns --split and the new placements add:
``split``, ``node_bytes``; ``mem``, ``via``, ``rank_bytes``).

The values come from a simple model, never from a measurement:
- MPI: a process drives one 200 Gb/s Slingshot port (25 GB/s each way, 23 reached), its
  rate limited at small messages by 1.5 M messages/s; the node's processes add up, both
  directions together reach 0.9 x twice one direction.
- NCCL: time = latency + busbw's bytes / a ceiling per placement; on one node the GPUs'
  NVLink (local HBM and LPDDR alike, peer HBM and peer LPDDR far below: the paper's
  finding), across nodes each GPU's network port (peer LPDDR still below).

A real paper set has one file per job (one processes-per-node count, one node count); here
one file per family holds every job's rows (ppn 1, 2, 4; 1, 2, 4 and 8 nodes), which the
figures read alike: they group by the ``ppn`` and ``nodes`` columns, not by file."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from h5fixtures import table
from analysis.results.h5writer import write_result

MPI_CASES: dict[str, type] = {
    "case_id": int, "mode": str, "alloc": str, "mem": str, "ppn": int, "pairs": int, "size_bytes": int,
    "window": int, "windows": int, "status": str, "reason": str, "reps": int, "median_GBps": float,
    "min_GBps": float, "max_GBps": float, "same_host": int, "verified": int, "split": int, "node_bytes": int,
}
MPI_SAMPLES: dict[str, type] = {
    "case_id": int, "rep": int, "mode": str, "alloc": str, "ppn": int, "size_bytes": int, "bytes": int,
    "time_s": float, "bandwidth_GBps": float, "node_bytes": int,
}
MPI_RANKS: dict[str, type] = {"rank": int, "host": str, "node": int, "local": int, "numa": int, "cpus": str}
NCCL_CASES: dict[str, type] = {
    "case_id": int, "collective": str, "placement": str, "alloc": str, "ranks": int, "nodes": int,
    "size_bytes": int, "iters": int, "status": str, "reason": str, "time_us": float, "algbw_GBps": float,
    "busbw_GBps": float, "verified": int, "mem": str, "via": str, "rank_bytes": int,
}

WINDOW = 64
PORT_GBPS = 23.0          # one process, one direction (25 GB/s line rate)
MESSAGES_PER_S = 1.5e6    # one process's small-message rate
BIDIR = 0.9               # both directions: 0.9 x twice one
PPN = (1, 2, 4)
NODE_SIZES = [1 << e for e in range(10, 31)]  # 1 KiB .. 1 GiB per node
REPS = 5
# NCCL busbw ceilings (GB/s): one node (NVLink between the 4 GPUs) and across nodes (a port per GPU).
NCCL_ONE_NODE = {"device": 310.0, "hbm-system": 305.0, "host": 290.0, "peer": 110.0, "peer-host": 45.0}
NCCL_NETWORK = {"device": 21.0, "hbm-system": 21.0, "host": 20.5, "peer": 19.5, "peer-host": 8.0}
NCCL_NODES = (1, 2, 4, 8)
NCCL_PER_NODE = 4
NCCL_ITERS = 20


def _root(topology: Mapping[str, Any], command: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool": "mempath", "tool_version": "0.2.0", "git_revision": "synthetic",
            "command_line": command, "host": topology.get("host", "nid000001"),
            "start_time": "2026-11-26T00:00:00Z", "end_time": "2026-11-26T00:30:00Z",
            "topology": json.dumps(topology), "kernel_release": "5.14.21", "arch": "aarch64",
            "page_size": 65536, "thp_enabled": "always [madvise] never", "cpu_governor": "performance",
            "cuda_driver_version": 12040, "cuda_runtime_version": 12030, "gpu_clocks": "[]",
            "gpu_uuids": "", "build_type": "Release", "compiler": "GNU 12.3.0", "synthetic": 1, **extra}


def _windows(size: int) -> int:
    """mpi_windows(): enough windows to move ~256 MiB, 2 to 100 (core/scaleout_plan.cpp)."""
    return int(min(100, max(2, math.ceil((256 << 20) / max(1, size * WINDOW)))))


def mpi_gbps(mode: str, ppn: int, node_bytes: int) -> float:
    """The model's node bandwidth (GB/s) for the node's bytes split among ``ppn`` processes."""
    message = node_bytes / ppn
    one = 1.0 / (1.0 / PORT_GBPS + 1.0 / (MESSAGES_PER_S * message / 1e9))
    node = ppn * one * (1.0 - 0.01 * (ppn - 1))
    return node * (2 * BIDIR if mode == "bi" else 1.0)


def _host_numas(topology: Mapping[str, Any]) -> list[int]:
    return [int(p["host_numa"]) for p in topology.get("processors", [])
            if p.get("kind") == "gpu" and p.get("host_numa") is not None] or [0]


def write_mpi(path: Path, topology: Mapping[str, Any]) -> Path:
    cases, samples = [], []
    rng = np.random.default_rng(14)
    for ppn in PPN:
        for alloc, mem in (("numa", "numa"), ("device", "gpu")):
            for mode in ("uni", "bi"):
                for node in NODE_SIZES:
                    size = node // ppn
                    gbps = mpi_gbps(mode, ppn, node) * (0.99 if alloc == "device" else 1.0)
                    windows = _windows(size)
                    moved = size * WINDOW * windows * ppn * (2 if mode == "bi" else 1)
                    noise = rng.normal(0, 0.01, REPS)
                    reps = gbps * (1 + noise - np.median(noise))  # the median is the model's value
                    case_id = len(cases)
                    cases.append({"case_id": case_id, "mode": mode, "alloc": alloc, "mem": mem, "ppn": ppn,
                                  "pairs": ppn, "size_bytes": size, "window": WINDOW, "windows": windows,
                                  "status": "ok", "reason": "", "reps": REPS, "median_GBps": float(np.median(reps)),
                                  "min_GBps": float(reps.min()), "max_GBps": float(reps.max()), "same_host": 0,
                                  "verified": int(alloc != "device"), "split": 1, "node_bytes": node})
                    samples += [{"case_id": case_id, "rep": k, "mode": mode, "alloc": alloc, "ppn": ppn,
                                 "size_bytes": size, "bytes": moved, "time_s": moved / (g * 1e9),
                                 "bandwidth_GBps": float(g), "node_bytes": node} for k, g in enumerate(reps)]
    numas = _host_numas(topology)
    ranks = [{"rank": node * 4 + local, "host": f"nid00000{node + 1}", "node": node, "local": local,
              "numa": numas[local % len(numas)], "cpus": f"{72 * local}-{72 * local + 71}"}
             for node in (0, 1) for local in range(4)]
    root = _root(topology, "srun -N 2 --ntasks-per-node=4 mempath-mpi bw --split --mode uni,bi "
                           "--alloc numa,device --min-size 1KiB --max-size 1GiB --output mpi_bw.h5",
                 {"mpi_ranks": 8, "mpi_nodes": 2, "mpi_library": "synthetic (Cray MPICH 8.1.28 modelled)"})
    return write_result(path, root, {"mpi_bw/cases": table(MPI_CASES, cases),
                                     "mpi_bw/samples": table(MPI_SAMPLES, samples),
                                     "mpi_bw/ranks": table(MPI_RANKS, ranks)})


def _placement(topology: Mapping[str, Any], name: str) -> tuple[str, str, str]:
    """(alloc, mem, via) of rank 0 (gpu0), as core/scaleout_plan.cpp's nccl_placement."""
    gpus = [p for p in topology["processors"] if p.get("kind") == "gpu"]
    own, nxt = gpus[0], gpus[1 % len(gpus)]
    alloc, mem = {"device": ("device", f"gpu{own['gpu']}"), "hbm-system": ("numa", f"numa{own['hbm_numa']}"),
                  "host": ("numa", f"numa{own['host_numa']}"), "peer": ("device", f"gpu{nxt['gpu']}"),
                  "peer-host": ("numa", f"numa{nxt['host_numa']}")}[name]
    via = next((p["via"] for p in topology.get("paths", []) if p["pu"] == f"gpu{own['gpu']}" and p["mem"] == mem), "")
    return alloc, mem, via


def busbw_factor(collective: str, ranks: int) -> float:
    return (2.0 if collective == "allreduce" else 1.0) * (ranks - 1) / ranks


def nccl_time_us(collective: str, placement: str, nodes: int, size: int) -> float:
    """The model's time of one collective of nccl-tests' ``size`` on ``nodes`` nodes."""
    ranks = nodes * NCCL_PER_NODE
    ceiling = (NCCL_ONE_NODE if nodes == 1 else NCCL_NETWORK)[placement]
    latency_us = 15.0 if nodes == 1 else 25.0 + 8.0 * math.log2(nodes)
    return latency_us + size * busbw_factor(collective, ranks) / (ceiling * 1e9) * 1e6


def write_nccl(path: Path, topology: Mapping[str, Any]) -> Path:
    cases = []
    for nodes in NCCL_NODES:
        ranks = nodes * NCCL_PER_NODE
        for placement in NCCL_ONE_NODE:
            alloc, mem, via = _placement(topology, placement)
            for collective in ("allreduce", "allgather"):
                if nodes == 1:  # the sweep: nccl-tests' sizes 1 KiB .. 4 GiB
                    sizes = [(s, s if collective == "allreduce" else s // ranks) for s in (1 << e for e in range(10, 33))]
                else:  # --paper-sizes
                    rank = (4 << 30) if collective == "allreduce" else (16 << 20)
                    sizes = [(rank if collective == "allreduce" else rank * ranks, rank)]
                for size, rank_bytes in sizes:
                    us = nccl_time_us(collective, placement, nodes, size)
                    algbw = size / (us * 1e-6) / 1e9
                    cases.append({"case_id": len(cases), "collective": collective, "placement": placement,
                                  "alloc": alloc, "ranks": ranks, "nodes": nodes, "size_bytes": size,
                                  "iters": NCCL_ITERS, "status": "ok", "reason": "", "time_us": us,
                                  "algbw_GBps": algbw, "busbw_GBps": algbw * busbw_factor(collective, ranks),
                                  "verified": 1, "mem": mem, "via": via, "rank_bytes": rank_bytes})
    root = _root(topology, "srun -N 1 --ntasks-per-node=4 mempath-mpi nccl --placement "
                           "device,hbm-system,host,peer,peer-host --max-size 4GiB; srun -N 2,4,8 "
                           "--ntasks-per-node=4 mempath-mpi nccl --paper-sizes (synthetic: one file)",
                 {"mpi_ranks": 32, "mpi_nodes": 8, "nccl_version": 21903})
    return write_result(path, root, {"nccl/cases": table(NCCL_CASES, cases)})


def write(folder: Path, topology: dict) -> list[Path]:
    """The scale-out families' synthetic files in ``folder``: mpi_bw.h5 and nccl.h5."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_mpi(folder / "mpi_bw.h5", topology), write_nccl(folder / "nccl.h5", topology)]
