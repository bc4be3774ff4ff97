"""The paper's Fig. 7: read and write bandwidth of every processor x memory, alone, with its
% of the path's theoretical peak (Fig. 3). Its contention half is fig07_contention.py; how
both draw, fig07_bars.py.

Memories are named by their role seen from the processor (model.roles), with the NUMA
node or GPU beside it. A case is drawn under the memory its pages were on after the run
(``placement``), never the one it asked for: a managed buffer a GPU pulled into its HBM is
an HBM case (results.cases.relocated)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..model.peaks import ASSUMED_NOTE
from ..model.roles import labelled
from ..render import style
from ..render.items import Comparison, Context, Drawn, Grid, item
from ..results.cases import best, relocated
from . import published
from .fig07_bars import (OPS, bar_panel, bw_figure, first_column_label, fit_texts, median_pct, panels_for, stats,
                         with_peaks)
from .paths import (COMPARED, compare, crosses, has_path, over_processors, paper_processors, path_facts, pu_title,
                    with_roles)

BW_COMMAND = "mempath bw --all"


def path_bandwidth(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """Per host, processor, memory (where the pages were) and op: the full-width case of
    the highest median among the allocators, its peak and % of it."""
    cases = ctx.table("bw/cases")
    if cases.empty or "op" not in cases:
        return pd.DataFrame(), []
    rw = cases[cases["op"].isin(OPS)]
    moved, notes = relocated(rw, ctx.topologies)
    keep = [(h, p) for h, t in ctx.topologies.items() for p in paper_processors(t)]
    moved = moved[[(h, p) in set(keep) for h, p in zip(moved["host"], moved["pu"])]] if not moved.empty else moved
    top = best(moved, ["host", "pu", "mem", "op"])
    if top.empty:
        return top, notes
    top = with_roles(with_peaks(top, ctx.models), ctx.topologies)
    top["label"] = [labelled(ctx.topologies[h], p, m) for h, p, m in zip(top["host"], top["pu"], top["mem"])]
    return top, notes


# Published Fig. 7 values and this run's same quantity: (processor kind, ops, memory role,
# a link the path must cross ("" any), statistic over the processors' % of peak: "median"
# of each processor's, or "max").
FIG7_ALONE: dict[str, tuple[str, tuple[str, ...], str, str, str]] = {
    "fig7.hopper.read.local_lpddr.pct": ("gpu", ("read",), "local LPDDR", "", "median"),
    "fig7.hopper.write.local_lpddr.pct": ("gpu", ("write",), "local LPDDR", "", "median"),
    "fig7.grace.read.local_hbm.pct": ("cpu", ("read",), "local HBM", "", "median"),
    "fig7.grace.write.local_hbm.pct": ("cpu", ("write",), "local HBM", "", "median"),
    "fig7.hopper.any.peer_lpddr.max_pct": ("gpu", OPS, "peer LPDDR", "nvlink", "max"),
}
# x86 published values: (processor kind, op, role, column): median over the processors.
X86_ALONE: dict[str, tuple[str, str, str, str]] = {
    "cpu_gpu_article.x86.cpu.read.local_ddr": ("cpu", "read", "local DDR", "median_GBps"),
}


def fig7_comparisons(frame: pd.DataFrame, ctx: Context) -> list[Comparison]:
    """Fig. 7's published values against this run (Grace nodes), the x86 ones against x86
    nodes; a node of the other kind has no such path and gets no row."""
    out = []
    for host in ctx.topologies:
        mine = frame[frame["host"] == host] if not frame.empty else frame
        grace = getattr(ctx.models.get(host), "grace", False)
        specs = FIG7_ALONE if grace else {}
        for pub in published.VALUES:
            if pub.key in specs:
                kind, ops, role_name, link, stat = specs[pub.key]
                if not has_path(ctx.topologies[host], kind, role_name, link):
                    continue
                rows = mine[(mine["pu_kind"] == kind) & mine["op"].isin(ops) & (mine["role"] == role_name)
                            & np.array([crosses(v, link) for v in mine["via"]], dtype=bool)] if not mine.empty else mine
                value, over = over_processors(rows, "pct", stat)
                facts = path_facts(ctx.topologies[host], kind, role_name, link, rows, published.DEF_BW_PCT, ops)
                out.append(compare("read_write_bandwidth", pub, value, f"{host}: {over}", facts))
            elif not grace and pub.key in X86_ALONE:
                kind, op, role_name, column = X86_ALONE[pub.key]
                if not has_path(ctx.topologies[host], kind, role_name):
                    continue
                rows = mine[(mine["pu_kind"] == kind) & (mine["op"] == op) & (mine["role"] == role_name)] \
                    if not mine.empty else mine
                value, over = over_processors(rows, column, "median")
                facts = path_facts(ctx.topologies[host], kind, role_name, "", rows, published.DEF_SOCKET_READ_RUN,
                                   (op,))
                out.append(compare("read_write_bandwidth", pub, value, f"{host}: {over}", facts))
    return out


FIG7_CSV = ("host", "pu", "op", "mem", "role", "label", "asked_mem", "alloc", "kernel", "threads",
            "median_GBps", "min_GBps", "max_GBps", "peak_GBps", "assumed", "pct", "placement", "run")


@item("read_write_bandwidth", "Fig. 7", "Read and write bandwidth of every processor and memory, % of peak",
      "figure", ("bw/cases",), BW_COMMAND, order=7)
def read_write_bandwidth(ctx: Context) -> Drawn:
    return bw_figure(ctx, "read_write_bandwidth", path_bandwidth, _bandwidth_grid, FIG7_CSV,
                     "no read or write case of /bw/cases ran alone (no noise), out of cache, on one memory of a "
                     f"socket or GPU; measured by `{BW_COMMAND}`")


def _bandwidth_grid(ctx: Context, frame: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 7's panels and caption (``found``: path_bandwidth's notes)."""
    several = len(ctx.topologies) > 1
    fitted = []

    def draw(ax: Any, panel: tuple[str, str]) -> None:
        part = frame[(frame["host"] == panel[0]) & (frame["pu"] == panel[1])]
        fitted.append((ax, bar_panel(ax, part, stats("median_GBps"), median_pct)))
        first_column_label(ax)

    notes = [
        "Bars: the median GB/s (decimal) of the case with the highest median among the allocators, with all "
        "cores of a socket or a GPU's full grid, read and write; above each, its % of the path's theoretical "
        "peak (Fig. 3: the slowest link or memory on the way, one direction), which the dotted line marks.",
        "Memories by their role seen from the processor; the peers of one role share a bar (their median; "
        "the whisker spans them). Every processor x memory is in read_write_bandwidth.csv.",
        "A case is drawn under the memory its pages were on after the run (placement), not the one it asked "
        f"for ({int((frame['asked_mem'] != frame['mem']).sum())} of the processor x memory x op values drawn "
        "moved so).",
        *found]
    if frame["assumed"].any():
        notes.append(ASSUMED_NOTE)
    comparisons = fig7_comparisons(frame, ctx)
    if comparisons:
        notes.append(COMPARED)
    skipped = sorted({p for h, t in ctx.topologies.items() for p in (q["name"] for q in t.get("processors", []))
                      if p not in paper_processors(t)})
    if skipped:
        notes.append(f"Left out: {', '.join(skipped)} (every socket at once: no memory is local to it).")
    return Grid(panels_for(frame, ctx), draw, lambda panel: (f"{panel[0]}\n" if several else "")
                + pu_title(ctx.topologies[panel[0]], panel[1]), style.PAGE_IN, 2.7, max_cols=2,
                finish=lambda fig, _axes: fit_texts(fig, fitted), caption=lambda: notes, comparisons=comparisons,
                processor=lambda panel: (panel[0], panel[1]))
