#!/usr/bin/env python3
"""Node inventory with mpi4py: every rank's host, CPU binding, topology and library
versions, gathered at rank 0 into a mempath result file as the table /inventory/ranks
(docs/schema.md). Run it as a module from the repository root, under the same launcher as
the benchmarks, e.g.

    cd REPO && srun --mpi=pmix python3 -m slurm.inventory --output RUN.h5 [--mempath build/mempath]

It appends to RUN.h5 when that is a mempath result file, and creates one otherwise, through
the analysis's writer: the repository's `analysis` package, which `python -m` finds in the
root it runs from (docs/design.md, "how a script outside the analysis reaches it").
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from pathlib import Path

COLUMNS = ("rank", "host", "local_rank", "cpus", "mpi_library", "mpi4py", "python", "kernel",
           "gpu_driver", "gpus", "nccl_version", "cuda_visible_devices", "topology_json")


def _run(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _nccl_version() -> str:
    try:
        lib = ctypes.CDLL("libnccl.so.2")
    except OSError:
        return ""
    version = ctypes.c_int(0)
    if lib.ncclGetVersion(ctypes.byref(version)) != 0:
        return ""
    v = version.value  # 22809 -> 2.28.9
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def rank_facts(rank: int, mpi_library: str, mpi4py_version: str, mempath: str | None) -> dict[str, object]:
    smi = shutil.which("nvidia-smi")
    gpus = _run(smi, "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader") if smi else ""
    driver = _run(smi, "--query-gpu=driver_version", "--format=csv,noheader").splitlines() if smi else []
    local = os.environ.get("SLURM_LOCALID", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "-1"))
    return {
        "rank": rank,
        "host": socket.gethostname(),
        "local_rank": int(local),
        "cpus": ",".join(str(c) for c in sorted(os.sched_getaffinity(0))),
        "mpi_library": (mpi_library.replace("\x00", "").strip().splitlines() or [""])[0],
        "mpi4py": mpi4py_version,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "gpu_driver": driver[0] if driver else "",
        "gpus": gpus.replace("\n", "; "),
        "nccl_version": _nccl_version(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        "topology_json": _run(mempath, "topo", "--json") if mempath else "",
    }


def write(path: Path, rows: list[dict[str, object]]) -> None:
    from analysis.results.h5writer import Column, write_result  # only rank 0 writes

    if path.exists():
        import h5py
        with h5py.File(path, "r") as f:
            if f.attrs.get("tool") not in ("mempath", b"mempath"):
                raise SystemExit(f"inventory: {path} is not a mempath result file; give a new path or a mempath run")
    kinds = {column: int if isinstance(rows[0][column], int) else str for column in COLUMNS}
    # HDF5 strings hold no NULs
    columns = [Column(c, kinds[c], "", [r[c] if kinds[c] is int else str(r[c]).replace("\x00", "") for r in rows])
               for c in COLUMNS]
    # A rerun replaces the inventory table, never mixes two.
    attrs = {} if path.exists() else {
        "tool": "mempath",
        "start_time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname()}
    write_result(path, attrs, {"inventory/ranks": columns}, update=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, type=Path, help="mempath result file to add /inventory/ranks to")
    parser.add_argument("--mempath", default=None, help="mempath binary for each rank's topology (mempath topo --json)")
    args = parser.parse_args(argv)
    try:
        import mpi4py
        from mpi4py import MPI
    except ImportError as error:
        print(f"inventory: mpi4py is not usable here ({error}); valid: an environment with mpi4py and an MPI library",
              file=sys.stderr)
        return 2
    try:
        import analysis.results.h5writer  # noqa: F401  (rank 0 writes through it; every rank finds out here)
    except ImportError as error:
        print(f"inventory: the analysis does not import ({error}); valid: run it from the repository root as "
              "`python3 -m slurm.inventory`, in a Python with h5py and numpy", file=sys.stderr)
        return 2
    if args.mempath and not Path(args.mempath).is_file():
        print(f"inventory: --mempath {args.mempath} is not a file", file=sys.stderr)
        return 2
    comm = MPI.COMM_WORLD
    facts = rank_facts(comm.Get_rank(), MPI.Get_library_version(), mpi4py.__version__, args.mempath)
    rows = comm.gather(facts, root=0)
    if comm.Get_rank() == 0:
        write(args.output, rows)
        hosts = sorted({r["host"] for r in rows})
        print(f"MEMPATH inventory ranks={len(rows)} hosts={','.join(hosts)} output={args.output} status=ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
