"""The report's own figures of `mempath bw` (under "Results", beside the path matrix):
thread scaling of the CPU paths and the copy heatmap, drawn from the Context's cases (bw
with its placement marked)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ..model.roles import labelled, role_label, role_rank
from ..render import style
from ..render.figures import COLUMN_IN, PAGE_IN, Heat, Styles, colour_only, heat_cells, heat_grid, heat_text, log2_threads
from ..render.items import Context, Drawn, Grid, faceted, item, mark
from ..results.cases import best, by_threads, ordered, unmeasured

OPS = ("read", "write", "copy")
SCALING_NOTE = ("Lines: memories by their role seen from the CPU of the panel (memories of one role, such as the "
                "peer nodes, share a look); band: min-max of the repetitions.")


def _processors(ctx: Context) -> dict[str, list[str]]:
    return {host: [p["name"] for p in t.get("processors", [])] for host, t in ctx.topologies.items()}


@item("thread_scaling", "", "Thread scaling (CPU)", "figure", (), "", order=1)
def thread_scaling(ctx: Context) -> Drawn:
    """GB/s against CPU threads: one panel per CPU and op (read, write, copy), one line per
    memory (copy: source -> destination) labelled by its role seen from that CPU; each point
    the best allocator at that thread count (median, band min-max). Paths measured at one
    thread count only (copies at all cores) have no scaling to show: the path matrix and
    the copy heatmap give them."""
    keys = ["host", "op", "pu", "mem", "dst_mem"]
    cases = ctx.cases if ctx.cases is not None else pd.DataFrame(columns=[*keys, "pu_kind"])
    points = by_threads(cases[cases["pu_kind"] == "cpu"], keys)
    if not points.empty:
        points = points.groupby(keys, sort=False, dropna=False).filter(lambda g: g["threads"].nunique() > 1)

    def grid(points: pd.DataFrame) -> Grid:
        pus = _processors(ctx)
        panels = [(host, pu, op) for host in ordered(points["host"], list(ctx.topologies))
                  for pu in ordered(points.loc[points["host"] == host, "pu"], pus.get(host, []))
                  for op in ordered(points.loc[(points["host"] == host) & (points["pu"] == pu), "op"], OPS)]
        styles = Styles()

        def draw(ax: Axes, panel: tuple[str, str, str]) -> None:
            host, pu, op = panel
            part = points[(points["host"] == host) & (points["pu"] == pu) & (points["op"] == op)]
            topology = ctx.topologies.get(host)
            lines = [(role_label(topology, pu, mem) + (f" → {role_label(topology, pu, str(dst))}" if dst else ""), line)
                     for (_, _, _, mem, dst), line in part.groupby(keys, sort=False, dropna=False)]
            for label, line in sorted(lines, key=lambda entry: role_rank(entry[0])):
                look = styles(label)
                threads = line["threads"].astype(int).to_numpy()
                ax.plot(threads, line["median_GBps"].astype(float), label=label, **look)
                ax.fill_between(threads, line["min_GBps"].astype(float), line["max_GBps"].astype(float),
                                color=look["color"], alpha=0.15, linewidth=0)
                mark(ax, label, threads=threads, median_GBps=line["median_GBps"].astype(float).to_numpy(),
                     min_GBps=line["min_GBps"].astype(float).to_numpy(),
                     max_GBps=line["max_GBps"].astype(float).to_numpy())
            log2_threads(ax, part["threads"])
            style.from_zero(ax)
            ax.grid(True)
            ax.set(xlabel="CPU threads", ylabel="GB/s (median)")

        def title(panel: tuple[str, str, str]) -> str:
            host, pu, op = panel
            return f"{host}: {pu} {op}" if ctx.many else f"{pu} {op}"
        return Grid(panels, draw, title, PAGE_IN if len(panels) > 1 else COLUMN_IN, max_cols=3, page=False)
    return faceted(ctx, "thread_scaling", points, "no CPU path measured at several thread counts", grid,
                   notes=[SCALING_NOTE])


@item("copy_heatmap", "", "Copy heatmap", "figure", (), "", order=2)
def copy_heatmap(ctx: Context) -> Drawn:
    """One panel per PU: source (row, labelled with its role seen from that PU) x
    destination memory (column, by name: the row labels map names to roles), median GB/s
    of the best copy case; one colour scale for all panels. Cells of copies that did not
    run say why (skipped, failed)."""
    cases = ctx.cases if ctx.cases is not None else pd.DataFrame(columns=["op", "host", "pu", "mem", "dst_mem"])
    copies = cases[cases["op"] == "copy"]
    top = best(copies, ["host", "pu", "mem", "dst_mem"])
    if top.empty:
        return Drawn(why_not="no copy case measured a path")
    mem_order = [m["name"] for t in ctx.topologies.values() for m in t.get("memories", [])]
    pus = _processors(ctx)
    panels = [(host, pu) for host in ordered(top["host"], list(ctx.topologies))
              for pu in ordered(top.loc[top["host"] == host, "pu"], pus.get(host, []))]
    chosen = {key: float(value) for key, value in
              zip(top[["host", "pu", "mem", "dst_mem"]].itertuples(index=False, name=None), top["median_GBps"])}
    heats = []
    for host, pu in panels:
        mine = copies[(copies["host"] == host) & (copies["pu"] == pu)]
        srcs, dsts = ordered(mine["mem"], mem_order), ordered(mine["dst_mem"], mem_order)
        grid = np.full((len(srcs), len(dsts)), np.nan)
        text = [[""] * len(dsts) for _ in srcs]
        for (src, dst), group in mine.groupby(["mem", "dst_mem"]):
            i, j = srcs.index(src), dsts.index(dst)
            if (host, pu, src, dst) not in chosen:
                text[i][j] = unmeasured(group)[0]
            else:
                grid[i, j] = chosen[host, pu, src, dst]
                text[i][j] = heat_text(grid[i, j])
        topology = ctx.topologies.get(host)
        heats.append(Heat(f"{host}: {pu}" if ctx.many else pu, grid, text,
                          [labelled(topology, pu, m) for m in srcs], dsts))
    layout, annotated = heat_grid(heats, "GB/s (median; bytes read + written)", "destination memory",
                                  "source memory", title="copy: median GB/s of the best case")
    cells = heat_cells(heats, "median_GBps")
    note = colour_only(heats, annotated, "[copy_heatmap.csv](copy_heatmap.csv) every cell")
    return faceted(ctx, "copy_heatmap", cells, "", lambda _: layout, notes=[note] if note else [],
                   csv=(cells, list(cells.columns)))
