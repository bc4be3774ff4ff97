"""Report parts for `mempath allocmatrix` (the allocator heatmap, the paper's Figure 5) and
`mempath um` (unified-memory behaviour): figures as PNG and PDF, Markdown lines for the
summary, and what could not be drawn."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from ..render import style
from ..render.mdtext import safe
from ..render.figures import (PAGE_IN, Files, Heat, Styles, cell_table, finish, heat_text, heatmaps, labelled_or_name,
                              save, topologies)
from ..results.io import RunSet
from ..render.items import Context, item
from .sections import Part, ok

ALLOCS = ("system", "numa", "pinned", "registered", "managed", "device")
UM_STATES = (("inplace", ("first", "later")), ("evict", ("cold", "warm", "evicted")))


def alloc_heatmap(runs: RunSet, out: Path) -> Files:
    """Median GB/s of cudaMemcpy per (source allocator, destination allocator), one panel
    per node and host NUMA memory (device -> device, measured once, shown in each); one
    colour scale for all panels."""
    cases = ok(runs.table("allocmatrix/cases"))
    if cases.empty:
        return Files()
    numa = [m if str(m).startswith("numa") else d for m, d in zip(cases["src_mem"], cases["dst_mem"])]
    cases = cases.assign(node=numa)
    panels = [(h, n) for h, n in dict.fromkeys(zip(cases["host"], cases["node"])) if str(n).startswith("numa")]
    if not panels:
        return Files()
    many_hosts = len({h for h, _ in panels}) > 1
    topos = topologies(runs)
    heats = []
    for host, node in panels:
        part = cases[(cases["host"] == host) & ((cases["node"] == node) | ~cases["node"].str.startswith("numa"))]
        rows = [a for a in ALLOCS if a in set(part["src_alloc"])]
        cols = [a for a in ALLOCS if a in set(part["dst_alloc"])]
        grid = np.full((len(rows), len(cols)), np.nan)
        for r in part.itertuples():
            grid[rows.index(r.src_alloc), cols.index(r.dst_alloc)] = float(r.median_GBps)
        mem = {a: m for a, m in zip(part["src_alloc"], part["src_mem"])}
        gpu = next((m for m in [*part["src_mem"], *part["dst_mem"]] if str(m).startswith("gpu")), "")
        where = labelled_or_name(topos.get(host), gpu, node)
        heats.append(Heat(f"{host}: " * many_hosts + f"host memory: {where}", grid,
                          [[heat_text(v) if np.isfinite(v) else "" for v in row] for row in grid],
                          [f"{a} ({mem.get(a, '')})" for a in rows], cols))
    fig, _, annotated = heatmaps(heats, "GB/s (median)", "destination allocator", "source allocator",
                                 title="cudaMemcpy between allocators: median GB/s")
    files = save(fig, out, "alloc_heatmap")
    extra, note = cell_table(heats, annotated, out, "alloc_heatmap", "median_GBps")
    return Files(files + extra, note)


def um_figure(runs: RunSet, out: Path) -> Files:
    """In-place update (first vs later runs) and cold/warm/evicted reads per allocator (dot
    plots, log GB/s), and the GPU time per cudaMemset iteration against the burst length
    after CPU writes."""
    samples = runs.table("um/samples")
    if samples.empty or "experiment" not in samples:
        return Files()
    topos = topologies(runs)
    fig, axes = style.panels(3, PAGE_IN, panel_height=2.0, max_cols=3)
    styles = Styles()
    for ax, (exp, states) in zip(axes[:2], UM_STATES):
        part = samples[samples["experiment"] == exp]
        allocs = list(dict.fromkeys(part["alloc"]))
        x = np.arange(len(allocs))
        for state in states:
            medians = [part[(part["alloc"] == a) & (part["state"] == state)]["bandwidth_GBps"].median()
                       for a in allocs]
            look = styles(state)
            ax.plot(x, medians, linestyle="none", marker=look["marker"], color=look["color"], label=state)
        ax.set_xticks(x, allocs, rotation=45, ha="right")
        ax.set_xlim(-0.5, len(allocs) - 0.5)
        style.log_axis(ax, "y")
        ax.grid(True, axis="y", which="major")
        ax.set(title=f"{exp}: median GB/s", ylabel="GB/s")
    ax = axes[2]
    inter = samples[(samples["experiment"] == "interleave") & (samples["phase"] == "gpu_memset")]
    for (alloc, before), line in inter.groupby(["alloc", "preceded_by"]):
        per_iter = (line["time_s"] / line["iterations"]).groupby(line["iterations"]).median() * 1e6
        label = f"{alloc}, after {before}"
        ax.plot(per_iter.index, per_iter.to_numpy(), label=label, **styles(label))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    style.log_axis(ax, "y")
    ax.grid(True, which="major")
    ax.set(title="interleave: GPU memset", xlabel="back-to-back GPU iterations", ylabel="µs per iteration")
    if inter.empty:
        ax.text(0.5, 0.5, "no interleave samples", ha="center", transform=ax.transAxes)
    gpu = (lambda g: str(g) if str(g).startswith("gpu") else f"gpu{int(g)}")
    where = ", ".join(dict.fromkeys(labelled_or_name(topos.get(h), gpu(g), m) for h, g, m in
                                    zip(samples["host"], samples["gpu"], samples["mem"]) if m))
    finish(fig, axes, f"Unified memory, buffers in {where}" if where else "Unified memory")
    return Files(save(fig, out, "unified_memory"))


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
        part.lines += [f"- {safe(r.get('experiment', 'allocmatrix'))} {safe(r.get('alloc', r.get('src_alloc', '')))}: "
                       f"{safe(r['reason'])}" for _, r in skipped.iterrows()] + [""]
    return part


@item("unified", "", "Allocators and unified memory", "section",
      ("allocmatrix/cases", "um/cases", "um/samples"), "", order=20)
def _section(ctx: Context) -> Part:
    part = write(ctx.runs, ctx.out)
    # Without a figure the section stays out of summary.md, and so do its misses: most
    # runs measure neither allocmatrix nor um.
    return Part(files=part.files, lines=part.lines if part.files else [])
