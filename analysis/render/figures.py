"""Figures of the report, each written as PNG and PDF (matplotlib, Agg backend)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import LogNorm, Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..results.cases import best, by_threads, ordered, unmeasured  # noqa: E402

OPS = ("read", "write", "copy")


def save(fig: Figure, out: Path, stem: str) -> list[Path]:
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for path in paths:
        fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths


def figure_grid(rows: int, cols: int, width: float, height: float) -> tuple[Figure, np.ndarray]:
    """A figure of rows x cols panels of width x height inches each (axes always 2-D)."""
    return plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False,
                        layout="constrained")


def _path_label(host: str, pu: str, mem: str, dst: str, with_host: bool) -> str:
    label = f"{pu} → {mem}" + (f" → {dst}" if dst else "")
    return f"{host}: {label}" if with_host else label


def thread_scaling(cases: pd.DataFrame, out: Path, with_host: bool = False) -> list[Path]:
    """GB/s against CPU threads per (pu, mem, op): one panel per op, log2 thread axis.

    Each point is the best allocator/kernel at that thread count (median, band min-max).
    Returns the files written; none when no CPU case measured a path.
    """
    keys = ["host", "op", "pu", "mem", "dst_mem"]
    points = by_threads(cases[cases["pu_kind"] == "cpu"], keys)
    if points.empty:
        return []
    ops = ordered(points["op"], OPS)
    fig, axes = figure_grid(1, len(ops), 5.5, 4.5)
    for ax, op in zip(axes[0], ops):
        part = points[points["op"] == op]
        for (host, _, pu, mem, dst), line in part.groupby(keys, sort=False):
            threads = line["threads"].astype(int).to_numpy()
            ax.plot(threads, line["median_GBps"], marker="o",
                    label=_path_label(host, pu, mem, str(dst), with_host))
            ax.fill_between(threads, line["min_GBps"].astype(float),
                            line["max_GBps"].astype(float), alpha=0.2)
        ticks = sorted(set(part["threads"].astype(int)))
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlim(ticks[0] / 1.5, ticks[-1] * 1.5)
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set(title=op, xlabel="CPU threads", ylabel="GB/s (median, band min-max)")
        ax.legend(fontsize="small", ncol=1 + len(ax.lines) // 12)
    return save(fig, out, "thread_scaling")


def annotate(ax: Axes, grid: np.ndarray, text: list[list[str]], label: str = "GB/s",
              norm: Normalize | None = None) -> None:
    """Colour the cells (log scale where values span more than 10x, or `norm` when panels
    share one scale) and write the text."""
    values = grid[np.isfinite(grid) & (grid > 0)]
    wide = values.size > 0 and values.max() > 10 * values.min()
    if norm is None:
        norm = LogNorm(values.min(), values.max()) if wide else Normalize(0, None)
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", norm=norm)
    for (i, j), cell in np.ndenumerate(np.array(text, dtype=object)):
        value = grid[i, j]
        dark = np.isfinite(value) and np.mean(image.cmap(image.norm(value))[:3]) < 0.5
        ax.text(j, i, cell, ha="center", va="center", fontsize="small",
                color="white" if dark else "black")
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.8)


def copy_heatmap(cases: pd.DataFrame, out: Path, mem_order: Sequence[str] = (),
                 with_host: bool = False) -> list[Path]:
    """One panel per PU: source x destination memory, median GB/s of the best copy case.

    Cells of copies that did not run say why (skipped, failed). Returns the files
    written; none when no copy case measured a path.
    """
    copies = cases[cases["op"] == "copy"]
    top = best(copies, ["host", "pu", "mem", "dst_mem"])
    if top.empty:
        return []
    panels = list(dict.fromkeys(zip(top["host"], top["pu"])))
    ncols = min(len(panels), 3)
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = figure_grid(nrows, ncols, 5.5, 4.8)
    for ax, (host, pu) in zip(axes.flat, panels):
        mine = copies[(copies["host"] == host) & (copies["pu"] == pu)]
        srcs, dsts = ordered(mine["mem"], mem_order), ordered(mine["dst_mem"], mem_order)
        grid = np.full((len(srcs), len(dsts)), np.nan)
        text = [[""] * len(dsts) for _ in srcs]
        for (src, dst), group in mine.groupby(["mem", "dst_mem"]):
            i, j = srcs.index(src), dsts.index(dst)
            ran = best(group, ["mem", "dst_mem"])
            if ran.empty:
                text[i][j] = unmeasured(group)[0]
            else:
                grid[i, j] = float(ran["median_GBps"].iloc[0])
                text[i][j] = f"{grid[i, j]:.1f}"
        annotate(ax, grid, text)
        ax.set_xticks(range(len(dsts)), dsts, rotation=45, ha="right")
        ax.set_yticks(range(len(srcs)), srcs)
        ax.set(xlabel="destination memory", ylabel="source memory",
               title=f"{host}: {pu}" if with_host else pu, facecolor="0.9")
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("copy: median GB/s (bytes read + written)")
    return save(fig, out, "copy_heatmap")
