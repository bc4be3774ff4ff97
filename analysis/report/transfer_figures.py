"""Transfer figures (PNG and PDF): size sweeps with the saturation size, small-copy latency."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..results import transfers
from ..results.cases import ordered
from ..render.figures import save, plt

SWEEP_STEM = "transfer_sweep"
LATENCY_STEM = "transfer_latency"


def _size_axis(ax: Axes, sizes: list[int]) -> None:
    """log2 x axis with a readable label on at most ~10 powers of two."""
    ax.set_xscale("log", base=2)
    lo, hi = min(sizes), max(sizes)
    exps = range(int(math.log2(lo)), int(math.ceil(math.log2(hi))) + 1)
    step = max(1, math.ceil(len(exps) / 10))
    ticks = [2 ** e for e in exps][::step]
    ax.set_xticks(ticks, [transfers.size_label(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_xlim(lo / 1.5, hi * 1.5)


def _panels(keys: list[tuple[str, str, str]]
            ) -> tuple[Figure, np.ndarray, list[tuple[str, str]], list[str]]:
    """A grid of (host, GPU) rows x direction columns; cells without data hidden."""
    rows = list(dict.fromkeys((host, gpu) for host, gpu, _ in keys))
    directions = ordered({d for _, _, d in keys}, transfers.DIRECTIONS + transfers.D2D)
    fig, axes = plt.subplots(len(rows), len(directions), squeeze=False, layout="constrained",
                             figsize=(5.5 * len(directions), 4.3 * len(rows)))
    for (i, j) in np.ndindex(axes.shape):
        if (*rows[i], directions[j]) not in keys:
            axes[i, j].set_visible(False)
    return fig, axes, rows, directions


def sweep_figure(cases: pd.DataFrame, with_host: bool = False) -> Figure | None:
    """Median GB/s against transfer size, one panel per (host, GPU, direction), one line
    per (engine, allocator, host node), band min-max; the saturation size of each line
    as a dashed vertical line of its colour, labelled. None when no sweep was measured."""
    groups = transfers.sweep_groups(cases)
    if not groups:
        return None
    keyed = [((str(g["host"].iloc[0]), transfers.gpu_label(g.iloc[0]),
               str(g["direction"].iloc[0])), g) for g in groups]
    keys = list(dict.fromkeys(k for k, _ in keyed))
    fig, axes, rows, directions = _panels(keys)
    runs_per_key = {k: {str(g["run"].iloc[0]) for kk, g in keyed if kk == k} for k in keys}
    for key, group in keyed:
        host, gpu, direction = key
        ax = axes[rows.index((host, gpu)), directions.index(direction)]
        first = group.iloc[0]
        label = transfers.group_label(first)
        if len(runs_per_key[key]) > 1:
            label += f" ({first['run']})"
        sizes = group["size_bytes"].astype(int).to_numpy()
        (line,) = ax.plot(sizes, group["median_GBps"].astype(float), marker="o",
                          markersize=3, label=label)
        ax.fill_between(sizes, group["min_GBps"].astype(float),
                        group["max_GBps"].astype(float), color=line.get_color(), alpha=0.15)
        saturated = transfers.saturation(group)
        if saturated is not None:
            ax.axvline(saturated, color=line.get_color(), linestyle="--", linewidth=1,
                       gid=f"saturation:{saturated}")
            ax.annotate(f"sat. {transfers.size_label(saturated)}", (saturated, 0.02),
                        xycoords=("data", "axes fraction"), rotation=90, fontsize="small",
                        color=line.get_color(), xytext=(3, 0), textcoords="offset points")
        all_sizes = [int(s) for k, g in keyed if k == key for s in g["size_bytes"]]
        _size_axis(ax, all_sizes)
        what = "sum of both directions" if direction.endswith("bidir") else "median"
        title = f"{gpu} {direction}" + (f" ({host})" if with_host else "")
        ax.set(title=title, xlabel="transfer size", ylabel=f"GB/s ({what}, band min-max)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    for ax in axes.flat:
        if ax.get_visible() and ax.lines:
            ax.legend(fontsize="small")
    fig.suptitle("host<->device transfers against size (dashed: saturation size, "
                 f">= {transfers.SATURATION_FRACTION:.0%} of the largest median)")
    return fig


def latency_figure(cases: pd.DataFrame, with_host: bool = False) -> Figure | None:
    """Host-observed copy + synchronise time against size, one panel per direction:
    median (solid) and p99 (dashed) per (GPU, engine, allocator, host node)."""
    points = transfers.latency(cases)
    if points.empty:
        return None
    directions = ordered(points["direction"], transfers.DIRECTIONS + transfers.D2D)
    fig, axes = plt.subplots(1, len(directions), squeeze=False, layout="constrained",
                             figsize=(5.5 * len(directions), 4.3))
    keys = ["host", "run", "gpu", "host_numa", "cpu_numa", "alloc", "engine"]
    for ax, direction in zip(axes[0], directions):
        part = points[points["direction"] == direction]
        for _, line in part.groupby(keys, sort=False):
            first = line.iloc[0]
            label = f"{transfers.gpu_label(first)} {transfers.group_label(first)}"
            label = f"{first['host']}: {label}" if with_host else label
            sizes = line["size_bytes"].astype(int).to_numpy()
            (median,) = ax.plot(sizes, line["median_time_s"].astype(float) * 1e6, marker="o",
                                markersize=3, label=f"{label} median")
            ax.plot(sizes, line["p99_time_s"].astype(float) * 1e6, linestyle="--",
                    color=median.get_color(), label=f"{label} p99")
        _size_axis(ax, [int(s) for s in part["size_bytes"]])
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set(title=direction, xlabel="transfer size",
               ylabel="µs (cudaMemcpyAsync + synchronise, host clock)")
        ax.legend(fontsize="small")
    fig.suptitle("small-transfer latency: median (solid) and p99 (dashed)")
    return fig


def write(cases: pd.DataFrame, out: Path, with_host: bool = False) -> tuple[list[Path],
                                                                          list[Path]]:
    """Write both figures where there is data; (sweep files, latency files)."""
    sweep = sweep_figure(cases, with_host)
    latency = latency_figure(cases, with_host)
    return (save(sweep, out, SWEEP_STEM) if sweep else [],
            save(latency, out, LATENCY_STEM) if latency else [])
