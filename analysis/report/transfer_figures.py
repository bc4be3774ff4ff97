"""The report's transfer figures, each an item: size sweeps with the saturation size,
small-copy latency. Panels are (GPU, direction) pairs wrapped into rows at page width; host
memories are named by their role seen from the GPU (``local LPDDR``)."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from matplotlib.axes import Axes

from ..model.roles import role_label
from ..render import style
from ..render.figures import COLUMN_IN, MIN_FONT_PT, PAGE_IN, Styles, bytes_axis, headed
from ..render.items import Context, Drawn, Grid, faceted, item, mark
from ..results import transfers
from ..results.cases import ordered

SWEEP_STEM = "transfer_sweep"
LATENCY_STEM = "transfer_latency"


def _size_axis(ax: Axes, sizes: list[int]) -> None:
    """The one size axis (render.figures.bytes_axis), a little room beyond the ends."""
    bytes_axis(ax, sizes)
    ax.set_xlim(min(sizes) / 1.5, max(sizes) * 1.5)


def _label(row: pd.Series, topology: Mapping[str, Any] | None) -> str:
    """transfers.group_label with the host node named by its role seen from the GPU
    (``ce pinned local LPDDR``); GPU<->GPU: the engine and, where the panel holds several
    destinations, the destination."""
    label = transfers.group_label(row)
    if row["direction"] in transfers.D2D:
        return label
    node = int(row["host_numa"])
    if node >= 0 and not int(row["all_gpus"]):
        label = label.replace(f"numa{node}", role_label(topology, f"gpu{int(row['gpu'])}", f"numa{node}"), 1)
    return label


def _panel(row: pd.Series) -> str:
    """The GPU part of a panel's key: ``gpu0``, ``all GPUs``; GPU<->GPU: the source GPU."""
    if row["direction"] in transfers.D2D:
        return f"gpu{transfers.pair(row)[0]} →"
    return transfers.gpu_label(row)


def sweep_grid(cases: pd.DataFrame, with_host: bool = False,
               topologies: Mapping[str, Mapping[str, Any]] | None = None) -> Grid | None:
    """Median GB/s against transfer size, one panel per (host, GPU, direction) (GPU<->GPU:
    per source GPU, a line per destination), one line per (engine, allocator, host node),
    band min-max; the saturation size of each line as a dashed vertical line of its colour,
    labelled. None when no sweep was measured."""
    topologies = topologies or {}
    groups = transfers.sweep_groups(cases)
    if not groups:
        return None
    keyed = [((str(g["host"].iloc[0]), _panel(g.iloc[0]), str(g["direction"].iloc[0])), g) for g in groups]
    hosts = ordered({k[0] for k, _ in keyed}, list(topologies))
    gpus = list(dict.fromkeys(k[1] for k, _ in keyed))
    directions = transfers.DIRECTIONS + transfers.D2D
    keys = sorted(dict.fromkeys(k for k, _ in keyed),
                  key=lambda k: (hosts.index(k[0]), gpus.index(k[1]),
                                 directions.index(k[2]) if k[2] in directions else len(directions)))
    runs_per_key = {k: {str(g["run"].iloc[0]) for kk, g in keyed if kk == k} for k in keys}
    dsts_per_key = {k: {transfers.pair(g.iloc[0])[1] for kk, g in keyed if kk == k} if k[2] in transfers.D2D
                    else set() for k in keys}
    styles, labels = Styles(), []
    for key, group in keyed:  # the looks in the lines' order, whichever panel draws a line first
        first = group.iloc[0]
        label = _label(first, topologies.get(key[0]))
        if len(dsts_per_key[key]) > 1:
            label += f" → gpu{transfers.pair(first)[1]}"
        if len(runs_per_key[key]) > 1:
            label += f" ({first['run']})"
        styles(label)
        labels.append(label)

    def draw(ax: Axes, panel: tuple[str, str, str]) -> None:
        named: set[int] = set()  # sizes whose saturation is labelled: lines saturating alike share it
        for (key, group), label in zip(keyed, labels):
            if key != panel:
                continue
            look = styles(label)
            sizes = group["size_bytes"].astype(int).to_numpy()
            ax.plot(sizes, group["median_GBps"].astype(float), label=label, markersize=2.5, **look)
            ax.fill_between(sizes, group["min_GBps"].astype(float), group["max_GBps"].astype(float),
                            color=look["color"], alpha=0.15, linewidth=0)
            mark(ax, label, size_bytes=sizes, median_GBps=group["median_GBps"].astype(float).to_numpy(),
                 min_GBps=group["min_GBps"].astype(float).to_numpy(),
                 max_GBps=group["max_GBps"].astype(float).to_numpy())
            saturated = transfers.saturation(group)
            if saturated is not None:
                ax.axvline(saturated, color=look["color"], linestyle="--", linewidth=0.8,
                           gid=f"saturation:{saturated}")
                if saturated in named:
                    continue
                named.add(saturated)
                ax.annotate(f"sat. {transfers.size_label(saturated)}", (saturated, 0.02),
                            xycoords=("data", "axes fraction"), rotation=90, fontsize=MIN_FONT_PT,
                            color=style.readable(look["color"]), xytext=(2, 0), textcoords="offset points")
        _size_axis(ax, [int(s) for k, g in keyed if k == panel for s in g["size_bytes"]])
        what = "both directions" if panel[2].endswith("bidir") else "median"
        ax.set(xlabel="transfer size", ylabel=f"GB/s ({what})")
        style.from_zero(ax)
        ax.grid(True)

    def title(panel: tuple[str, str, str]) -> str:
        host, gpu, direction = panel
        name = gpu if not gpu.endswith("→") else (
            f"{gpu} gpu{next(iter(dsts_per_key[panel]))}" if len(dsts_per_key[panel]) == 1 else f"{gpu} peers")
        return f"{name} {direction}" + (f" ({host})" if with_host else "")
    return Grid(keys, draw, title, PAGE_IN if len(keys) > 1 else COLUMN_IN, max_cols=2, page=False,
                finish=headed("Transfers by size (dashed: saturation size, the first at "
                              f"{transfers.SATURATION_FRACTION:.0%} of the largest median; band: min-max)"))


def latency_grid(cases: pd.DataFrame, with_host: bool = False,
                 topologies: Mapping[str, Mapping[str, Any]] | None = None) -> Grid | None:
    """Host-observed copy + synchronise time against size, one panel per (GPU, direction):
    median and p99 per (engine, allocator, host node). None when no latency case was measured."""
    topologies = topologies or {}
    points = transfers.latency(cases)
    if points.empty:
        return None
    directions = transfers.DIRECTIONS + transfers.D2D
    panels = list(dict.fromkeys(zip(points["host"], [transfers.gpu_label(r) for _, r in points.iterrows()],
                                    points["direction"])))
    panels.sort(key=lambda k: directions.index(k[2]) if k[2] in directions else len(directions))
    panels.sort(key=lambda k: (k[0], k[1]))
    keys = ["host", "run", "gpu", "host_numa", "cpu_numa", "alloc", "engine", "direction"]
    styles = Styles()
    many_runs = points["run"].nunique() > 1
    lines = []  # (panel, label, line) in the lines' order, their looks taken in it
    for _, line in points.groupby(keys, sort=False):
        first = line.iloc[0]
        label = _label(first, topologies.get(first["host"])) + (f" ({first['run']})" if many_runs else "")
        lines.append(((first["host"], transfers.gpu_label(first), first["direction"]), label, line))
        for stat in ("median", "p99"):
            styles(f"{label}, {stat}")

    def draw(ax: Axes, panel: tuple[str, str, str]) -> None:
        for _, label, line in (entry for entry in lines if entry[0] == panel):
            sizes = line["size_bytes"].astype(int).to_numpy()
            for stat, column in (("median", "median_time_s"), ("p99", "p99_time_s")):
                micro = line[column].astype(float).to_numpy() * 1e6
                ax.plot(sizes, line[column].astype(float) * 1e6, label=f"{label}, {stat}", markersize=2.5,
                        **styles(f"{label}, {stat}"))
                mark(ax, f"{label}, {stat}", size_bytes=sizes, time_us=micro)
        host, _, direction = panel
        part = points[(points["host"] == host) & (points["direction"] == direction)]
        _size_axis(ax, [int(s) for s in part["size_bytes"]])
        style.from_zero(ax)
        ax.grid(True)
        ax.set(xlabel="transfer size", ylabel="µs, copy + synchronise")
    return Grid(panels, draw, lambda k: f"{k[1]} {k[2]}" + (f" ({k[0]})" if with_host else ""),
                PAGE_IN if len(panels) > 1 else COLUMN_IN, max_cols=2, page=False,
                finish=headed("small-transfer latency (cudaMemcpyAsync + synchronise, host clock)"))


def _drawn(ctx: Context, stem: str, grid: Callable[..., Grid | None], why: str) -> Drawn:
    cases, unusable = transfers.load(ctx.runs)
    layout = None if unusable else grid(cases, ctx.many, ctx.topologies)
    return faceted(ctx, stem, cases if layout else cases.iloc[0:0], unusable or why, lambda _: layout)


@item(SWEEP_STEM, "", "Transfer size sweep", "figure", (), "", order=10.1)
def sweep(ctx: Context) -> Drawn:
    return _drawn(ctx, SWEEP_STEM, sweep_grid, "no measured `mempath memcpy --sweep` group")


@item(LATENCY_STEM, "", "Small-transfer latency", "figure", (), "", order=10.2)
def latency(ctx: Context) -> Drawn:
    return _drawn(ctx, LATENCY_STEM, latency_grid, "no measured `mempath memcpy --latency` case")
