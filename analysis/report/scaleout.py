"""Report part for the scale-out runs of `mempath-mpi`: the paper's Fig. 14 (node-to-node
bandwidth) and Figs. 18-19 (NCCL bus bandwidth against the buffer size and the node count),
drawn by their items (analysis/figures/scaleout.py); the NCCL table at the largest size and
the mpi4py node inventory."""
from __future__ import annotations

import numpy as np

from ..results.io import RunSet
from ..render.items import Context, item
from .sections import Part, ok
from ..render.tables import markdown


def _inventory_lines(runs: RunSet) -> list[str]:
    inv = runs.table("inventory/ranks")
    if inv.empty:
        return []
    rows = [[r.rank, r.host, r.cpus, r.mpi_library, r.nccl_version or "-", r.gpu_driver or "-"]
            for r in inv.sort_values("rank").itertuples()]
    return ["### Node inventory (mpi4py)", ""] + markdown(
        ["rank", "host", "CPUs", "MPI library", "NCCL", "GPU driver"], rows, right={0})


#: The paper's figures this section shows (analysis/figures/scaleout.py): Fig. 14, MPI
#: node-to-node bandwidth; Figs. 18-19, NCCL against the buffer size and the node count.
SHARED = ("mpi_bandwidth", "nccl_by_size", "nccl_by_nodes")


def write(ctx: Context) -> Part:
    runs = ctx.runs
    part = Part()
    for key in SHARED:
        part.add_item(ctx, key)
    nccl = ok(runs.table("nccl/cases"))
    if not nccl.empty:
        top = nccl[nccl["size_bytes"] == nccl["size_bytes"].max()]
        groups = top.groupby(["collective", "placement", "ranks", "nodes", "size_bytes"])
        part.lines += markdown(
            ["collective", "placement", "GPUs", "nodes", "size", "busbw GB/s (median of runs)"],
            [[coll, placement, ranks, nodes, f"{int(size) >> 20} MiB", f"{np.median(g['busbw_GBps']):.1f}"]
             for (coll, placement, ranks, nodes, size), g in groups], right={2, 3, 4, 5})
    part.lines += _inventory_lines(runs)
    return part


@item("scaleout", "", "Scale-out (MPI, NCCL)", "section",
      ("mpi_bw/cases", "nccl/cases", "inventory/ranks"), "", order=40)
def _section(ctx: Context) -> Part:
    part = write(ctx)
    # Single-node runs hold no MPI or NCCL table: their figures' misses are no news.
    return Part(files=part.files, lines=part.lines)
