"""Report part for the scale-out runs of `mempath-mpi` (issue 5): node-to-node bandwidth
against message size per ranks-per-node, uni- vs bidirectional (the paper's Figure 14);
NCCL bus bandwidth against size per buffer placement, and against the node count at the
largest size (Figures 18-19); the mpi4py node inventory as a table."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter

from ..render.figures import figure_grid, save
from ..results.io import RunSet
from .sections import Context, Part, ok, section
from ..render.tables import markdown


def _size_label(value: float, _pos=None) -> str:
    v = int(value)
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if v >= 1 << shift:
            return f"{v >> shift}{unit}"
    return str(v)


def bytes_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))


def mpi_bandwidth(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("mpi_bw/cases"))
    if cases.empty:
        return []
    modes = [m for m in ("uni", "bi") if m in set(cases["mode"])]
    fig, axes = figure_grid(1, len(modes), 6.5, 4.5)
    for ax, mode in zip(axes[0], modes):
        part = cases[cases["mode"] == mode]
        for (host, alloc, ppn), line in part.groupby(["host", "alloc", "ppn"]):
            line = line.sort_values("size_bytes")
            ax.plot(line["size_bytes"], line["median_GBps"], marker=".", label=f"{host} {alloc}, {ppn}/node")
        bytes_axis(ax)
        ax.set(title=f"MPI {'unidirectional' if mode == 'uni' else 'bidirectional'} node-to-node",
               xlabel="message size (bytes)", ylabel="GB/s (median)")
        ax.legend(fontsize="small")
    return save(fig, out, "mpi_bandwidth")


def nccl_bandwidth(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("nccl/cases"))
    if cases.empty:
        return []
    colls = list(dict.fromkeys(cases["collective"]))
    fig, axes = figure_grid(2, len(colls), 6.5, 4.25)
    for col, coll in enumerate(colls):
        part = cases[cases["collective"] == coll]
        ax = axes[0][col]
        for (placement, ranks, nodes), line in part.groupby(["placement", "ranks", "nodes"]):
            line = line.groupby("size_bytes")["busbw_GBps"].median()
            ax.plot(line.index, line.to_numpy(), marker=".", label=f"{placement}, {ranks} GPUs on {nodes} node(s)")
        bytes_axis(ax)
        ax.set(title=f"NCCL {coll}: bus bandwidth", xlabel="buffer size (bytes)", ylabel="busbw GB/s")
        ax.legend(fontsize="small")
        ax = axes[1][col]
        largest = part[part["size_bytes"] == part["size_bytes"].max()]
        for placement, line in largest.groupby("placement"):
            line = line.groupby("nodes")["busbw_GBps"].median()
            ax.plot(line.index, line.to_numpy(), marker="o", label=placement)
        ax.set(title=f"NCCL {coll} at {int(part['size_bytes'].max()) >> 20} MiB vs nodes", xlabel="nodes",
               ylabel="busbw GB/s")
        ax.set_xticks(sorted(set(largest["nodes"])))
        ax.legend(fontsize="small")
    return save(fig, out, "nccl_bandwidth")


def _inventory_lines(runs: RunSet) -> list[str]:
    inv = runs.table("inventory/ranks")
    if inv.empty:
        return []
    rows = [[r.rank, r.host, r.cpus, r.mpi_library, r.nccl_version or "-", r.gpu_driver or "-"]
            for r in inv.sort_values("rank").itertuples()]
    return ["### Node inventory (mpi4py)", ""] + markdown(
        ["rank", "host", "CPUs", "MPI library", "NCCL", "GPU driver"], rows, right={0})


def write(runs: RunSet, out: Path) -> Part:
    part = Part()
    part.add_figure("mpi_bandwidth", "MPI node-to-node bandwidth", mpi_bandwidth(runs, out),
                    "no `mempath-mpi bw` case finished")
    part.add_figure("nccl_bandwidth", "NCCL collectives under placement", nccl_bandwidth(runs, out),
                    "no `mempath-mpi nccl` case finished")
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


@section("scaleout", "Scale-out (MPI, NCCL)",
         ("mpi_bw/cases", "nccl/cases", "inventory/ranks"), order=40)
def _section(ctx: Context) -> Part:
    part = write(ctx.runs, ctx.out)
    # Single-node runs hold no MPI or NCCL table: their figures' misses are no news.
    return Part(files=part.files, lines=part.lines)
