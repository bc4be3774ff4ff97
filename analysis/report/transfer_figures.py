"""Transfer figures (PNG and PDF): size sweeps with the saturation size, small-copy latency.
Panels are (GPU, direction) pairs wrapped into rows at page width; host memories are named
by their role seen from the GPU (``local LPDDR``)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..render import style
from ..render.figures import COLUMN_IN, MIN_FONT_PT, PAGE_IN, Files, Styles, finish, role_label
from ..results import transfers
from ..results.cases import ordered

SWEEP_STEM = "transfer_sweep"
LATENCY_STEM = "transfer_latency"


def _size_axis(ax: Axes, sizes: list[int]) -> None:
    """log2 x axis with a readable label on at most 5 powers of two."""
    ax.set_xscale("log", base=2)
    lo, hi = min(sizes), max(sizes)
    exps = range(int(math.log2(lo)), int(math.ceil(math.log2(hi))) + 1)
    step = max(1, math.ceil(len(exps) / 5))
    ticks = [2 ** e for e in exps][::step]
    ax.set_xticks(ticks, [transfers.size_label(t) for t in ticks], rotation=90)
    ax.minorticks_off()
    ax.set_xlim(lo / 1.5, hi * 1.5)


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


def sweep_figure(cases: pd.DataFrame, with_host: bool = False,
                 topologies: Mapping[str, Mapping[str, Any]] | None = None) -> Figure | None:
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
    fig, axes = style.panels(len(keys), PAGE_IN if len(keys) > 1 else COLUMN_IN, max_cols=2)
    runs_per_key = {k: {str(g["run"].iloc[0]) for kk, g in keyed if kk == k} for k in keys}
    dsts_per_key = {k: {transfers.pair(g.iloc[0])[1] for kk, g in keyed if kk == k} if k[2] in transfers.D2D
                    else set() for k in keys}
    styles = Styles()
    named: set[tuple[int, int]] = set()  # (panel, size) whose saturation is labelled: lines saturating alike share it
    for key, group in keyed:
        host, gpu, direction = key
        ax = axes[keys.index(key)]
        first = group.iloc[0]
        label = _label(first, topologies.get(host))
        if len(dsts_per_key[key]) > 1:
            label += f" → gpu{transfers.pair(first)[1]}"
        if len(runs_per_key[key]) > 1:
            label += f" ({first['run']})"
        look = styles(label)
        sizes = group["size_bytes"].astype(int).to_numpy()
        ax.plot(sizes, group["median_GBps"].astype(float), label=label, markersize=2.5, **look)
        ax.fill_between(sizes, group["min_GBps"].astype(float), group["max_GBps"].astype(float),
                        color=look["color"], alpha=0.15, linewidth=0)
        saturated = transfers.saturation(group)
        if saturated is not None:
            ax.axvline(saturated, color=look["color"], linestyle="--", linewidth=0.8, gid=f"saturation:{saturated}")
            if (keys.index(key), saturated) in named:
                continue
            named.add((keys.index(key), saturated))
            ax.annotate(f"sat. {transfers.size_label(saturated)}", (saturated, 0.02),
                        xycoords=("data", "axes fraction"), rotation=90, fontsize=MIN_FONT_PT,
                        color=style.readable(look["color"]), xytext=(2, 0), textcoords="offset points")
    for key, ax in zip(keys, axes):
        host, gpu, direction = key
        _size_axis(ax, [int(s) for k, g in keyed if k == key for s in g["size_bytes"]])
        what = "both directions" if direction.endswith("bidir") else "median"
        name = gpu if not gpu.endswith("→") else (
            f"{gpu} gpu{next(iter(dsts_per_key[key]))}" if len(dsts_per_key[key]) == 1 else f"{gpu} peers")
        ax.set(title=f"{name} {direction}" + (f" ({host})" if with_host else ""), xlabel="transfer size",
               ylabel=f"GB/s ({what})")
        style.from_zero(ax)
        ax.grid(True)
    finish(fig, axes, "Transfers by size (dashed: saturation size, the first at "
                      f"{transfers.SATURATION_FRACTION:.0%} of the largest median; band: min-max)")
    return fig


def latency_figure(cases: pd.DataFrame, with_host: bool = False,
                   topologies: Mapping[str, Mapping[str, Any]] | None = None) -> Figure | None:
    """Host-observed copy + synchronise time against size, one panel per (GPU, direction):
    median and p99 per (engine, allocator, host node)."""
    topologies = topologies or {}
    points = transfers.latency(cases)
    if points.empty:
        return None
    directions = transfers.DIRECTIONS + transfers.D2D
    panels = list(dict.fromkeys(zip(points["host"], [transfers.gpu_label(r) for _, r in points.iterrows()],
                                    points["direction"])))
    panels.sort(key=lambda k: directions.index(k[2]) if k[2] in directions else len(directions))
    panels.sort(key=lambda k: (k[0], k[1]))
    fig, axes = style.panels(len(panels), PAGE_IN if len(panels) > 1 else COLUMN_IN, max_cols=2)
    keys = ["host", "run", "gpu", "host_numa", "cpu_numa", "alloc", "engine", "direction"]
    styles = Styles()
    many_runs = points["run"].nunique() > 1
    for _, line in points.groupby(keys, sort=False):
        first = line.iloc[0]
        ax = axes[panels.index((first["host"], transfers.gpu_label(first), first["direction"]))]
        label = _label(first, topologies.get(first["host"])) + (f" ({first['run']})" if many_runs else "")
        sizes = line["size_bytes"].astype(int).to_numpy()
        for stat, column in (("median", "median_time_s"), ("p99", "p99_time_s")):
            ax.plot(sizes, line[column].astype(float) * 1e6, label=f"{label}, {stat}", markersize=2.5,
                    **styles(f"{label}, {stat}"))
    for (host, gpu, direction), ax in zip(panels, axes):
        part = points[(points["host"] == host) & (points["direction"] == direction)]
        _size_axis(ax, [int(s) for s in part["size_bytes"]])
        style.from_zero(ax)
        ax.grid(True)
        ax.set(title=f"{gpu} {direction}" + (f" ({host})" if with_host else ""), xlabel="transfer size",
               ylabel="µs, copy + synchronise")
    finish(fig, axes, "small-transfer latency (cudaMemcpyAsync + synchronise, host clock)")
    return fig


def write(cases: pd.DataFrame, out: Path, with_host: bool = False,
          topologies: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[Files, Files]:
    """Write both figures where there is data; (sweep files, latency files)."""
    sweep = sweep_figure(cases, with_host, topologies)
    latency = latency_figure(cases, with_host, topologies)
    return (Files(style.save(sweep, out, SWEEP_STEM, page=False)) if sweep else Files(),
            Files(style.save(latency, out, LATENCY_STEM, page=False)) if latency else Files())
