"""The paper's Fig. 7 under contention: read and write bandwidth of each processor while its
partner processor reads a buffer (``--noise partner``, sec. III-C), the reader's own GB/s
stacked on top and the same case alone beside it (fig07_read_write.py), drawn as the other
half (fig07_bars.py)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..model.peaks import ASSUMED_NOTE
from ..model.roles import labelled, role
from ..render import style
from ..render.items import Comparison, Context, Drawn, Grid, item
from ..results.cases import relocated, same_memory
from . import published
from .fig07_bars import (OPS, bar_panel, bw_figure, first_column_label, fit_texts, median_pct, panels_for, stats,
                         with_peaks)
from .fig07_read_write import path_bandwidth
from .paths import COMPARED, compare, has_path, over_processors, paper_processors, path_facts, pu_title, with_roles

NOISE_COMMAND = "mempath bw --all --op read,write --threads all --noise partner"


def noise_gbps(cases: pd.DataFrame) -> pd.Series:
    """The noise reader's own GB/s in the case's window: ``noise_GBps`` (C++ writer), its
    lower-case spelling, or noise_bytes / noise_seconds; NaN where not recorded."""
    for name in ("noise_GBps", "noise_gbps"):
        if name in cases:
            return pd.to_numeric(cases[name], errors="coerce")
    if "noise_bytes" in cases and "noise_seconds" in cases:
        seconds = pd.to_numeric(cases["noise_seconds"], errors="coerce")
        return pd.to_numeric(cases["noise_bytes"], errors="coerce") / seconds.where(seconds > 0) / 1e9
    return pd.Series(math.nan, index=cases.index)


def contention(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """Read and write cases that ran with a noise reader (``noise`` = PU:MEM), per host,
    processor, memory, op and reader: the best allocator's median, the reader's own GB/s,
    their sum and its % of the memory's peak where both used one memory."""
    cases = ctx.table("bw/cases")
    if cases.empty or "noise" not in cases:
        return pd.DataFrame(), []
    noisy = cases[cases["op"].isin(OPS) & (cases["noise"].fillna("").str.contains(":"))]
    noisy = noisy.assign(noise_GBps=noise_gbps(noisy))
    moved, notes = relocated(noisy, ctx.topologies)
    if moved.empty:
        return moved, notes
    keep = {(h, p) for h, t in ctx.topologies.items() for p in paper_processors(t)}
    moved = moved[[(h, p) in keep for h, p in zip(moved["host"], moved["pu"])]]
    moved = moved[moved["cache_resident"].fillna(0).astype(int) != 1]
    if moved.empty:
        return moved, notes
    top = moved.loc[moved.groupby(["host", "pu", "mem", "op", "noise"])["median_GBps"].idxmax().values]
    top = with_roles(with_peaks(top.reset_index(drop=True), ctx.models), ctx.topologies)
    split = top["noise"].str.split(":", n=1, expand=True)
    top = top.assign(noise_pu=split[0], noise_mem=split[1])
    top = with_roles(top, ctx.topologies, "noise_pu", "noise_mem", "noise_role")
    same = [same_memory(ctx.topologies.get(h, {}), m, n)
            for h, m, n in zip(top["host"], top["mem"], top["noise_mem"])]
    mem_peak = [ctx.models[h].memory(m).gbps if h in ctx.models else None for h, m in zip(top["host"], top["mem"])]
    total = top["median_GBps"].astype(float) + top["noise_GBps"].astype(float)
    top = top.assign(same_memory=same, sum_GBps=total,
                     memory_peak_GBps=[p or math.nan for p in mem_peak],
                     sum_pct=[100.0 * t / p if s and p else math.nan for t, p, s in zip(total, mem_peak, same)])
    alone, _ = path_bandwidth(ctx)
    if not alone.empty:
        key = alone.set_index(["host", "pu", "mem", "op"])["median_GBps"]
        top["alone_GBps"] = [key.get((h, p, m, o), math.nan) for h, p, m, o in
                             zip(top["host"], top["pu"], top["mem"], top["op"])]
    else:
        top["alone_GBps"] = math.nan
    top["label"] = [labelled(ctx.topologies[h], p, m) for h, p, m in zip(top["host"], top["pu"], top["mem"])]
    return top, notes


# Published contention values: (measured kind, op, role, reader kind, reader's memory role, statistic).
FIG7_NOISE: dict[str, tuple[str, str, str, str, str, str]] = {
    "fig7.contention.grace.write.local_hbm.pct": ("cpu", "write", "local HBM", "gpu", "local LPDDR", "pct"),
    "fig7.contention.hopper.write.local_hbm.pct": ("gpu", "write", "local HBM", "cpu", "local HBM", "pct"),
    "fig7.contention.sum.write.local_hbm.gbps": ("gpu", "write", "local HBM", "cpu", "local HBM", "sum_GBps"),
    "fig7.contention.sum.write.local_hbm.pct": ("gpu", "write", "local HBM", "cpu", "local HBM", "sum_pct"),
}


def contention_comparisons(frame: pd.DataFrame, ctx: Context) -> list[Comparison]:
    """The published contention values against Grace nodes: the sec. III-C text measured
    only a GH200."""
    out = []
    for host in [h for h in ctx.topologies if getattr(ctx.models.get(h), "grace", False)]:
        mine = frame[frame["host"] == host] if not frame.empty else frame
        for pub in published.VALUES:
            if pub.key not in FIG7_NOISE:
                continue
            kind, op, role_name, reader, reader_role, column = FIG7_NOISE[pub.key]
            if not has_path(ctx.topologies[host], kind, role_name):
                continue
            rows = mine
            if not mine.empty:
                rows = mine[(mine["pu_kind"] == kind) & (mine["op"] == op) & (mine["role"] == role_name)
                            & (mine["noise_role"] == reader_role)
                            & mine["noise_pu"].str.startswith(reader)]
                rows = rows[np.isfinite(rows[column].astype(float))]
            value, over = over_processors(rows, column, "median")
            definition = published.DEF_CONTENTION_SUM_RUN if column.startswith("sum") else published.DEF_CONTENTION_PCT
            facts = path_facts(ctx.topologies[host], kind, role_name, "", rows, definition, (op,))
            out.append(compare("read_write_under_contention", pub, value, f"{host}: {over}", facts))
    return out


CONTENTION_CSV = ("host", "pu", "op", "mem", "role", "label", "asked_mem", "alloc", "noise", "noise_role",
                  "median_GBps", "pct", "peak_GBps", "assumed", "noise_GBps", "sum_GBps", "same_memory",
                  "memory_peak_GBps", "sum_pct", "alone_GBps", "run")


def _contention_text(rows: pd.DataFrame) -> str:
    text = median_pct(rows)
    sums = rows["sum_pct"].astype(float)
    if np.isfinite(sums).any():
        text += f" Σ{float(sums.median()):.0f}%"
    return text


@item("read_write_under_contention", "Fig. 7", "Read and write bandwidth while the partner processor reads",
      "figure", ("bw/cases",), NOISE_COMMAND, order=7.5)
def read_write_under_contention(ctx: Context) -> Drawn:
    why = "no read or write case of /bw/cases ran with a noise reader (the `noise` column is empty in every run); " \
        f"measured by `{NOISE_COMMAND}`"
    return bw_figure(ctx, "read_write_under_contention", contention, _contention_grid, CONTENTION_CSV, why)


def _contention_grid(ctx: Context, frame: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 7's contention panels and caption (``found``: contention's notes)."""
    several = len(ctx.topologies) > 1
    recorded = np.isfinite(frame["noise_GBps"].astype(float))
    fitted = []

    def draw(ax: Any, panel: tuple[str, str, str]) -> None:
        host, pu, noise = panel
        part = frame[(frame["host"] == host) & (frame["pu"] == pu) & (frame["noise"] == noise)]
        fitted.append((ax, bar_panel(ax, part, stats("median_GBps"), _contention_text,
                                     stack=lambda rows: float(rows["noise_GBps"].astype(float).median()),
                                     marker=lambda rows: float(rows["alone_GBps"].astype(float).median()))))
        first_column_label(ax)

    def title(panel: tuple[str, str, str]) -> str:
        host, pu, noise = panel
        reader, mem = noise.split(":", 1)
        return ((f"{host}\n" if several else "") + f"{pu_title(ctx.topologies[host], pu)}\n"
                f"+ {reader} reads {role(ctx.topologies[host], reader, mem) or mem}")

    notes = [
        "Each panel: one processor's read and write cases while another processor (the noise reader, named "
        "above the panel with the role of the memory it reads, seen from itself) reads a buffer continuously "
        "(`--noise partner`: Grace reads its superchip's HBM while Hopper is measured, Hopper its LPDDR while "
        "Grace is; the paper's sec. III-C).",
        "Coloured bar: the measured case's median GB/s, its % of the path's peak above it; grey segment on "
        "top: the reader's own GB/s within the case's window, so the bar's top is the two processors' sum; "
        "Σ: that sum as % of the memory's peak, where both used one memory (the paper's 2682.8 GB/s, 67%); "
        "diamond: the same case alone.",
        *found]
    missing = sorted(set(frame.loc[~recorded, "run"]))
    if missing:
        notes.append(f"The noise reader's own bandwidth was not recorded in {', '.join(missing)} (a bw file "
                     "before the noise_GBps column): those bars show the measured case only, without a sum.")
    if frame["assumed"].any():
        notes.append(ASSUMED_NOTE)
    comparisons = contention_comparisons(frame, ctx)
    if comparisons:
        notes.append(COMPARED + " The sum held against the paper's 2682.8 GB/s is Hopper's write of its HBM "
                     "plus Grace's reading of that HBM in the same window; the paper's own 17% (Grace writing "
                     "HBM) and 65% (Hopper) of 450 and 4000 GB/s add up to 2676.5, its sum within rounding, so "
                     "the text may sum the two processors' writes instead.")
    return Grid(panels_for(frame, ctx, ("noise",)), draw, title, style.PAGE_IN, 3.0, max_cols=2,
                finish=lambda fig, _axes: fit_texts(fig, fitted), title_size=7, caption=lambda: notes,
                comparisons=comparisons, processor=lambda panel: (panel[0], panel[1]))
