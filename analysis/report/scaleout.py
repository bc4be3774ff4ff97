"""Report part for the scale-out runs of `mempath-mpi`: node-to-node bandwidth
against message size per ranks-per-node, uni- vs bidirectional (the paper's Figure 14);
NCCL bus bandwidth against size per buffer placement, and against the node count at the
largest size (Figures 18-19); the mpi4py node inventory as a table."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from ..render import style
from ..render.figures import COLUMN_IN, PAGE_IN, Files, Styles, finish, save
from ..results.io import RunSet
from ..render.items import Context, item
from .sections import Part, ok
from ..render.tables import markdown


def _size_label(value: float, _pos=None) -> str:
    v = int(value)
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if v >= 1 << shift:
            return f"{v >> shift}{unit}"
    return str(v)


def bytes_axis(ax) -> None:
    """A log2 size axis labelled 4K, 1M, 1G..., at most 6 labels."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=6))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))


def mpi_bandwidth(runs: RunSet, out: Path) -> Files:
    """GB/s against message size, one panel per mode (uni-, bidirectional), one line per
    buffer allocator and ranks per node."""
    cases = ok(runs.table("mpi_bw/cases"))
    if cases.empty:
        return Files()
    modes = [m for m in ("uni", "bi") if m in set(cases["mode"])]
    many_hosts = cases["host"].nunique() > 1
    fig, axes = style.panels(len(modes), PAGE_IN if len(modes) > 1 else COLUMN_IN)
    styles = Styles()
    for ax, mode in zip(axes, modes):
        part = cases[cases["mode"] == mode]
        for (host, alloc, ppn), line in part.groupby(["host", "alloc", "ppn"]):
            line = line.groupby("size_bytes")["median_GBps"].median()
            label = f"{host}: " * many_hosts + f"{alloc}, {ppn} rank(s)/node"
            ax.plot(line.index, line.to_numpy(), label=label, **styles(label))
        bytes_axis(ax)
        style.from_zero(ax)
        ax.grid(True)
        ax.set(title=f"MPI {'unidirectional' if mode == 'uni' else 'bidirectional'}, node to node",
               xlabel="message size (bytes)", ylabel="GB/s (median)")
    finish(fig, axes)
    return Files(save(fig, out, "mpi_bandwidth"))


def nccl_bandwidth(runs: RunSet, out: Path) -> Files:
    """Per collective: bus bandwidth against buffer size, one line per placement (with the
    GPUs and nodes where a placement ran on several); where the runs span several node
    counts, a second panel: the largest size against the node count."""
    cases = ok(runs.table("nccl/cases"))
    if cases.empty:
        return Files()
    colls = list(dict.fromkeys(cases["collective"]))
    scaling = cases.groupby("collective")["nodes"].nunique().max() > 1
    fig, axes = style.panels(len(colls) * (1 + scaling), PAGE_IN if scaling or len(colls) > 1 else COLUMN_IN,
                             max_cols=2)
    styles = Styles()
    for col, coll in enumerate(colls):
        part = cases[cases["collective"] == coll]
        ax = axes[(1 + scaling) * col]
        several = part.groupby("placement")[["ranks", "nodes"]].apply(lambda g: len(g.drop_duplicates()) > 1)
        for (placement, ranks, nodes), line in part.groupby(["placement", "ranks", "nodes"]):
            line = line.groupby("size_bytes")["busbw_GBps"].median()
            label = placement + (f", {ranks} GPUs on {nodes} node(s)" if several[placement] else "")
            ax.plot(line.index, line.to_numpy(), label=label, **styles(label))
        bytes_axis(ax)
        style.from_zero(ax)
        ax.grid(True)
        shapes = part[["ranks", "nodes"]].drop_duplicates().itertuples(False)
        gpus = ", ".join(f"{r} GPUs on {n} node(s)" for r, n in shapes)
        ax.set(title=f"NCCL {coll}" + ("" if several.any() else f", {gpus}"), xlabel="buffer size (bytes)",
               ylabel="busbw GB/s (median)")
        if not scaling:
            continue
        ax = axes[2 * col + 1]
        largest = part[part["size_bytes"] == part["size_bytes"].max()]
        for placement, line in largest.groupby("placement"):
            line = line.groupby("nodes")["busbw_GBps"].median()
            ax.plot(line.index, line.to_numpy(), label=placement, **styles(placement))
        style.from_zero(ax)
        ax.grid(True)
        ax.set(title=f"NCCL {coll} at {int(part['size_bytes'].max()) >> 20} MiB", xlabel="nodes",
               ylabel="busbw GB/s (median)")
        ax.set_xticks(sorted(set(largest["nodes"])))
    finish(fig, axes, "NCCL bus bandwidth by buffer placement")
    return Files(save(fig, out, "nccl_bandwidth"))


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


@item("scaleout", "", "Scale-out (MPI, NCCL)", "section",
      ("mpi_bw/cases", "nccl/cases", "inventory/ranks"), "", order=40)
def _section(ctx: Context) -> Part:
    part = write(ctx.runs, ctx.out)
    # Single-node runs hold no MPI or NCCL table: their figures' misses are no news.
    return Part(files=part.files, lines=part.lines)
