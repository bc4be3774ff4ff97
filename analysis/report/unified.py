"""Report parts for `mempath allocmatrix` (the paper's Fig. 5, drawn by its item in
analysis/figures/copies.py) and `mempath um` (unified-memory behaviour): figures as PNG and PDF, Markdown lines for the
summary, and what could not be drawn."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter

from ..model.roles import labelled
from ..render import style
from ..render.mdtext import safe
from ..render.figures import PAGE_IN, Styles, headed
from ..render.items import Context, Drawn, Grid, faceted, item, mark
from .sections import Part

UM_STATES = (("inplace", ("first", "later")), ("evict", ("cold", "warm", "evicted")))


@item("unified_memory", "", "Unified memory", "figure", (), "", order=20.1)
def um_figure(ctx: Context) -> Drawn:
    """In-place update (first vs later runs) and cold/warm/evicted reads per allocator (dot
    plots, log GB/s), and the GPU time per cudaMemset iteration against the burst length
    after CPU writes. A log axis cannot show 0 GB/s: such medians are left out and named in
    the note, and an experiment with nothing to show has no panel."""
    samples = ctx.table("um/samples")
    if "experiment" not in samples:
        samples = samples.iloc[0:0]
    dots, dropped = {}, []
    for exp, states in UM_STATES:
        part = samples[samples["experiment"] == exp] if not samples.empty else samples
        medians = {(a, state): part[(part["alloc"] == a) & (part["state"] == state)]["bandwidth_GBps"].median()
                   for a in dict.fromkeys(part.get("alloc", ())) for state in states}
        dropped += [f"{exp} {a} {state}" for (a, state), v in medians.items() if not v > 0 and not np.isnan(v)]
        if any(v > 0 for v in medians.values()):
            dots[exp] = (states, medians)
    absent = [exp for exp, _ in UM_STATES if exp not in dots]
    note = " ".join(([f"No panel for {', '.join(absent)}: the runs hold no sample of it above 0 GB/s."] if absent else [])
                    + ([f"Not drawn (0 GB/s, a log axis cannot show it): {', '.join(dropped)}."] if dropped else []))
    return faceted(ctx, "unified_memory", samples, "no `mempath um` samples in these runs",
                   lambda samples: _grid(ctx, samples, dots), notes=[note] if note else [])


def _grid(ctx: Context, samples: pd.DataFrame, dots: dict) -> Grid:
    styles = Styles()
    inter = samples[(samples["experiment"] == "interleave") & (samples["phase"] == "gpu_memset")]

    def draw(ax: Axes, panel: str) -> None:
        if panel in dots:
            states, medians = dots[panel]
            allocs = list(dict.fromkeys(a for a, _ in medians))
            x = np.arange(len(allocs))
            for state in states:
                shown = [medians[a, state] if medians[a, state] > 0 else np.nan for a in allocs]
                look = styles(state)
                ax.plot(x, shown, linestyle="none", marker=look["marker"], color=look["color"], label=state)
                mark(ax, state, alloc=allocs, median_GBps=shown)
            ax.set_xticks(x, allocs, rotation=90)
            ax.set_xlim(-0.5, len(allocs) - 0.5)
            style.log_axis(ax, "y")
            ax.grid(True, axis="y", which="major")
            ax.set(ylabel="GB/s")
            return
        for (alloc, before), line in inter.groupby(["alloc", "preceded_by"]):
            per_iter = (line["time_s"] / line["iterations"]).groupby(line["iterations"]).median() * 1e6
            label = f"{alloc}, after {before}"
            ax.plot(per_iter.index, per_iter.to_numpy(), label=label, **styles(label))
            mark(ax, label, iterations=per_iter.index.to_numpy(), us_per_iteration=per_iter.to_numpy())
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        style.log_axis(ax, "y")
        ax.grid(True, which="major")
        ax.set(xlabel="back-to-back GPU iterations", ylabel="µs per iteration")
        if inter.empty:
            ax.text(0.5, 0.5, "no interleave samples", ha="center", transform=ax.transAxes)

    def gpu(g: object) -> str:
        return str(g) if str(g).startswith("gpu") else f"gpu{int(g)}"
    where = ", ".join(dict.fromkeys(labelled(ctx.topologies.get(h), gpu(g), m) for h, g, m in
                                    zip(samples["host"], samples["gpu"], samples["mem"]) if m))
    return Grid([*dots, "interleave"], draw,
                lambda panel: f"{panel}: median GB/s" if panel in dots else "interleave: GPU memset", PAGE_IN, 2.0,
                max_cols=3, finish=headed(f"Unified memory, buffers in {where}" if where else "Unified memory"))


def write(ctx: Context) -> Part:
    """The paper's Fig. 5 (cudaMemcpy between allocators, its item in
    analysis/figures/copies.py) and the unified-memory figure, with their summary lines."""
    runs = ctx.runs
    part = Part()
    part.add_item(ctx, "cudamemcpy_allocators")
    part.add_item(ctx, "unified_memory")
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
    part = write(ctx)
    # Without a figure the section stays out of summary.md, and so do its misses: most
    # runs measure neither allocmatrix nor um.
    return Part(files=part.files, lines=part.lines if part.files else [])
