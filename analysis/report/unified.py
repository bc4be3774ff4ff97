"""Report parts for `mempath allocmatrix` (the allocator heatmap, the paper's Figure 5) and
`mempath um` (unified-memory behaviour): figures as PNG and PDF, Markdown lines for the
summary, and what could not be drawn."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..render.figures import annotate, figure_grid, save
from ..results.io import RunSet
from .sections import Context, Part, ok, section

ALLOCS = ("system", "numa", "pinned", "registered", "managed", "device")
UM_STATES = (("inplace", ("first", "later")), ("evict", ("cold", "warm", "evicted")))


def alloc_heatmap(runs: RunSet, out: Path) -> list[Path]:
    """Median GB/s of cudaMemcpy per (source allocator, destination allocator), one panel
    per node and host NUMA memory (device -> device, measured once, shown in each)."""
    cases = ok(runs.table("allocmatrix/cases"))
    if cases.empty:
        return []
    numa = [m if str(m).startswith("numa") else d for m, d in zip(cases["src_mem"], cases["dst_mem"])]
    cases = cases.assign(node=numa)
    panels = [(h, n) for h, n in dict.fromkeys(zip(cases["host"], cases["node"])) if str(n).startswith("numa")]
    if not panels:
        return []
    fig, axes = figure_grid(1, len(panels), 6.5, 5.5)
    for ax, (host, node) in zip(axes[0], panels):
        part = cases[(cases["host"] == host) & ((cases["node"] == node) | ~cases["node"].str.startswith("numa"))]
        rows = [a for a in ALLOCS if a in set(part["src_alloc"])]
        cols = [a for a in ALLOCS if a in set(part["dst_alloc"])]
        grid = np.full((len(rows), len(cols)), np.nan)
        for r in part.itertuples():
            grid[rows.index(r.src_alloc), cols.index(r.dst_alloc)] = float(r.median_GBps)
        annotate(ax, grid, [[f"{v:.1f}" if np.isfinite(v) else "" for v in row] for row in grid])
        mem = {a: m for a, m in zip(part["src_alloc"], part["src_mem"])}
        ax.set_yticks(range(len(rows)), [f"{a} ({mem.get(a, '')})" for a in rows])
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
        ax.set(title=f"{host}, host memory {node}: cudaMemcpy median GB/s",
               xlabel="destination allocator", ylabel="source allocator")
    return save(fig, out, "alloc_heatmap")


def um_figure(runs: RunSet, out: Path) -> list[Path]:
    """In-place update (first vs later runs) and cold/warm/evicted reads per allocator, and
    the GPU time per cudaMemset iteration against the burst length after CPU writes."""
    samples = runs.table("um/samples")
    if samples.empty or "experiment" not in samples:
        return []
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5), layout="constrained")
    for ax, (exp, states) in zip(axes[:2], UM_STATES):
        part = samples[samples["experiment"] == exp]
        allocs = list(dict.fromkeys(part["alloc"]))
        width = 0.8 / max(1, len(states))
        for i, state in enumerate(states):
            medians = [part[(part["alloc"] == a) & (part["state"] == state)]["bandwidth_GBps"].median()
                       for a in allocs]
            ax.bar(np.arange(len(allocs)) + i * width, medians, width, label=state)
        ax.set_xticks(np.arange(len(allocs)) + width * (len(states) - 1) / 2, allocs)
        ax.set_yscale("log")
        ax.set(title=f"{exp}: median GB/s", ylabel="GB/s (log)")
        ax.legend(fontsize="small")
    ax = axes[2]
    inter = samples[(samples["experiment"] == "interleave") & (samples["phase"] == "gpu_memset")]
    for (alloc, before), line in inter.groupby(["alloc", "preceded_by"]):
        per_iter = (line["time_s"] / line["iterations"]).groupby(line["iterations"]).median() * 1e6
        ax.plot(per_iter.index, per_iter.to_numpy(), marker="o", label=f"{alloc}, after {before}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(title="interleave: GPU memset time per iteration", xlabel="back-to-back GPU iterations",
           ylabel="us per iteration (median)")
    if inter.empty:
        ax.text(0.5, 0.5, "no interleave samples", ha="center", transform=ax.transAxes)
    else:
        ax.legend(fontsize="small")
    return save(fig, out, "unified_memory")


def write(runs: RunSet, out: Path) -> Part:
    """The allocator heatmap and the unified-memory figure, with their summary lines."""
    part = Part()
    part.add_figure("alloc_heatmap", "Allocator matrix (cudaMemcpy)", alloc_heatmap(runs, out),
                    "no `mempath allocmatrix` case measured a pair")
    part.add_figure("unified_memory", "Unified memory", um_figure(runs, out), "no `mempath um` samples in these runs")
    skipped = pd.concat([t[t["status"] == "skipped"] for name, t in runs.tables.items()
                         if name in ("um/cases", "allocmatrix/cases") and "status" in t] or
                        [pd.DataFrame()])
    if not skipped.empty:
        part.lines += ["Skipped unified-memory and allocator cases:", ""]
        part.lines += [f"- {r.get('experiment', 'allocmatrix')} {r.get('alloc', r.get('src_alloc', ''))}: "
                       f"{r['reason']}" for _, r in skipped.iterrows()] + [""]
    return part


@section("unified", "Allocators and unified memory", ("allocmatrix/cases", "um/cases", "um/samples"),
         order=20)
def _section(ctx: Context) -> Part:
    part = write(ctx.runs, ctx.out)
    # Without a figure the section stays out of summary.md, and so do its misses: most
    # runs measure neither allocmatrix nor um.
    return Part(files=part.files, lines=part.lines if part.files else [])
