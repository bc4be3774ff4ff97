"""Report part for the applications: STREAM bandwidth by thread count with the
best thread count marked, the GPU stream kernels under placement (the paper's
BabelStream table), cuBLAS GEMM TFLOP/s by size per data type and operand placement
against the peak model (Figures 15-16), and LLM decode tokens/s per weight placement next
to its memory-time bound (Figure 17). Several runs: medians over the runs of one node."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ..model.roles import labelled
from ..render import style
from ..render.figures import COLUMN_IN, MIN_FONT_PT, PAGE_IN, Styles, headed, log2_threads, text_in
from ..results.gpu_reads import llm_bounds
from ..results.io import RunSet
from ..render.items import Context, Drawn, Grid, faceted, item, mark
from .sections import Part, ok
from ..render.tables import markdown, num

CPU_KERNELS = ("copy", "scale", "add", "triad")
GPU_KERNELS = ("copy", "mul", "add", "triad", "dot")


def _placement(mem: str, alloc: str) -> str:
    return f"{mem} `{alloc}`"


def sweep_incomplete(cases: pd.DataFrame) -> pd.Series:
    """Rows of a CPU thread sweep that its run never finished (a --timeout, a signal; docs/
    schema.md, `sweep_complete`): their best is only the best of the thread counts reached.
    Files from before that column mark it by `best_threads` still -1."""
    sweep = cases["sweep"] == 1
    unset = cases["best_threads"] == -1
    if "sweep_complete" not in cases:
        return sweep & unset
    done = cases["sweep_complete"]
    return sweep & ((done == 0) | (done.isna() & unset))


@item("stream_threads", "", "STREAM by thread count", "figure", (), "", order=50.1)
def stream_threads(ctx: Context) -> Drawn:
    """Best GB/s of each STREAM kernel against the thread count, one panel per CPU and
    placement of the arrays; the best triad thread count marked."""
    cases = ok(ctx.table("stream/cases"))
    cases = cases[(cases["pu_kind"] == "cpu") & (cases["sweep"] == 1)] if not cases.empty else cases
    return faceted(ctx, "stream_threads", cases, "no CPU thread sweep of `mempath stream` finished",
                   lambda cases: _threads_grid(ctx, cases))


def _threads_grid(ctx: Context, cases: pd.DataFrame) -> Grid:
    panels = list(dict.fromkeys(zip(cases["host"], cases["pu"], cases["mem"], cases["alloc"])))
    many_hosts = len({p[0] for p in panels}) > 1
    several_allocs = len({p[3] for p in panels}) > 1
    styles = Styles()

    def draw(ax: Axes, panel: tuple[str, str, str, str]) -> None:
        host, pu, mem, alloc = panel
        mine = cases[(cases["host"] == host) & (cases["pu"] == pu) & (cases["mem"] == mem) & (cases["alloc"] == alloc)]
        best = mine.groupby(["kernel", "threads"])["best_GBps"].median()
        for kernel in CPU_KERNELS:
            if kernel in best.index.get_level_values(0):
                line = best.loc[kernel]
                ax.plot(line.index, line.to_numpy(), label=kernel, **styles(kernel))
                mark(ax, kernel, threads=line.index.to_numpy(), best_GBps=line.to_numpy())
        triad = best.loc["triad"] if "triad" in best.index.get_level_values(0) else pd.Series(dtype=float)
        if not triad.empty:
            t = int(triad.idxmax())
            label = f"best so far: {t} (sweep incomplete)" if sweep_incomplete(mine).any() else f"best: {t}"
            ax.axvline(t, color="0.55", linestyle=":", linewidth=0.8)
            # Left of its line, unless the line is the panel's first thread count (it ran over the
            # y axis' labels there)
            first = t <= int(mine["threads"].min())
            ax.annotate(label, (t, 0.04), xycoords=("data", "axes fraction"), textcoords="offset points",
                        xytext=(3 if first else -3, 0), ha="left" if first else "right", fontsize=MIN_FONT_PT,
                        color="0.35")
        log2_threads(ax, mine["threads"])
        style.from_zero(ax)
        ax.grid(True)
        ax.set(xlabel="threads", ylabel="best GB/s")

    def title(panel: tuple[str, str, str, str]) -> str:
        host, pu, mem, alloc = panel
        where = labelled(ctx.topologies.get(host), pu, mem) + (f", {alloc}" if several_allocs else "")
        return f"{host}: " * many_hosts + f"{pu} → {where}"
    allocs = ", ".join(dict.fromkeys(p[3] for p in panels))
    return Grid(panels, draw, title, PAGE_IN if len(panels) > 1 else COLUMN_IN, max_cols=3,
                finish=headed("STREAM (CPU) by thread count" + ("" if several_allocs else f", arrays from {allocs}")
                              + " (dotted: the best triad thread count)"))


def _gpu_table(runs: RunSet) -> pd.DataFrame:
    cases = ok(runs.table("stream/cases"))
    cases = cases[cases["pu_kind"] == "gpu"] if not cases.empty else cases
    if cases.empty:
        return cases
    return cases.pivot_table(index=["host", "pu", "mem", "alloc"], columns="kernel", values="best_GBps",
                             aggfunc="median").reindex(columns=[k for k in GPU_KERNELS])


def _dots(ax, rows: list[str], values: dict[str, np.ndarray], styles: Styles, xlabel: str,
          columns: tuple[str, str]) -> None:
    """A dot plot: one row per category (top to bottom), one mark per series, log x (no
    bars on a log axis); its source data under ``columns`` (the category's, the value's)."""
    y = np.arange(len(rows))
    for label, xs in values.items():
        look = styles(label)
        ax.plot(xs, y, linestyle="none", marker=look["marker"], color=look["color"], label=label)
        mark(ax, label, **{columns[0]: rows, columns[1]: xs})
    ax.set_yticks(y, rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    style.log_axis(ax, "x")
    ax.grid(True, axis="x", which="major")
    ax.set_xlabel(xlabel)


def _dot_grid(panels: list, rows: list[list[str]], draw: Callable[[Axes, Any], None], title: Callable[[Any], str],
              heading: str) -> Grid:
    """Panels for dot plots: rows of 0.16 in, as many per line as their labels allow."""
    label_w = max(text_in(r) for part in rows for r in part)
    per_row = max(1, int(PAGE_IN // (label_w + 1.8)))
    height = max(len(part) for part in rows) * 0.16 + 0.75
    width = COLUMN_IN if len(panels) == 1 and label_w + 1.8 <= COLUMN_IN else PAGE_IN
    return Grid(panels, draw, title, width, height, per_row, headed(heading))


@item("stream_gpu_placement", "", "GPU stream kernels by placement", "figure", (), "", order=50.2)
def stream_gpu_placement(ctx: Context) -> Drawn:
    """Best GB/s of each GPU stream kernel per placement of the arrays: a dot plot (log GB/s,
    HBM and host memory differ by 10x and more), one panel per GPU."""
    table = _gpu_table(ctx.runs)
    return faceted(ctx, "stream_gpu_placement", table, "no GPU case of `mempath stream` finished",
                   lambda table: _placement_grid(ctx, table))


def _placement_grid(ctx: Context, table: pd.DataFrame) -> Grid:
    gpus = list(dict.fromkeys((h, pu) for h, pu, _, _ in table.index))
    many_hosts = len({h for h, _ in gpus}) > 1
    rows = {(h, pu): [(mem, alloc) for hh, pp, mem, alloc in table.index if (hh, pp) == (h, pu)] for h, pu in gpus}
    names = {k: [f"{labelled(ctx.topologies.get(k[0]), k[1], mem)}, {alloc}" for mem, alloc in v]
             for k, v in rows.items()}
    styles = Styles()

    def draw(ax: Axes, gpu: tuple[str, str]) -> None:
        part = table.loc[gpu]
        _dots(ax, names[gpu], {k: part[k].to_numpy(dtype=float) for k in GPU_KERNELS}, styles, "best GB/s (log)",
              ("arrays_in", "best_GBps"))
    return _dot_grid(gpus, list(names.values()), draw, lambda g: f"{g[0]}: " * many_hosts + f"{g[1]}: arrays in",
                     "GPU stream kernels by placement of the arrays")


@item("gemm_sweep", "", "GEMM TFLOP/s by size and operand placement", "figure", (), "", order=50.3)
def gemm_sweep(ctx: Context) -> Drawn:
    """TFLOP/s against n (m = n = k), one panel per data type, one line per placement of A
    and B (role seen from the GPU); the peak model as a dashed line."""
    cases = ok(ctx.table("gemm/cases"))
    return faceted(ctx, "gemm_sweep", cases, "no `mempath gemm` case finished", lambda cases: _gemm_grid(ctx, cases))


def _gemm_grid(ctx: Context, cases: pd.DataFrame) -> Grid:
    dtypes = list(dict.fromkeys(cases["dtype"]))
    many_hosts = cases["host"].nunique() > 1
    styles = Styles()

    def draw(ax: Axes, dtype: str) -> None:
        mine = cases[cases["dtype"] == dtype]
        for (host, gpu, mem, alloc), part in mine.groupby(["host", "gpu", "a_mem", "a_alloc"], sort=False):
            line = part.groupby("n")["median_TFLOPs"].median()
            label = f"{host}: " * many_hosts + f"{labelled(ctx.topologies.get(host), f'gpu{int(gpu)}', mem)}, {alloc}"
            ax.plot(line.index, line.to_numpy(), label=label, **styles(label))
            mark(ax, label, n=line.index.to_numpy(), median_TFLOPs=line.to_numpy())
        peak = mine["peak_TFLOPs"].dropna()
        if not peak.empty:
            ax.axhline(float(peak.max()), color="black", linestyle="--", linewidth=0.8)
            ax.annotate(f"peak model {peak.max():.0f}", (0.02, float(peak.max())), xycoords=("axes fraction", "data"),
                        textcoords="offset points", xytext=(0, -9), fontsize=MIN_FONT_PT)
        ax.set_xscale("log", base=2)
        sizes = sorted(set(int(n) for n in mine["n"]))
        shown = sizes[::max(1, -(-len(sizes) // 5))]
        ax.set_xticks(shown, [str(n) for n in shown])
        ax.minorticks_off()
        style.log_axis(ax, "y")
        ax.grid(True, which="major")
        ax.set(xlabel="n (m = n = k)", ylabel="TFLOP/s (median)")
    return Grid(dtypes, draw, lambda dtype: f"GEMM {dtype}: A, B placed; C in HBM",
                PAGE_IN if len(dtypes) > 1 else COLUMN_IN, max_cols=3)


@item("llm_placement", "", "LLM decode by weight placement", "figure", (), "", order=50.4)
def llm_placement(ctx: Context) -> Drawn:
    """Decode tokens/s per placement of the weights next to its memory-time bound: a dot
    plot on a log axis (the placements differ by orders of magnitude)."""
    cases = ok(ctx.table("llm/cases"))
    if "way" in cases:  # the offload sweep is its own figure (llm_offload)
        cases = cases[cases["way"].fillna("") == ""]
    rows = llm_bounds(ctx.runs, cases, "weight_mem").groupby(
        ["host", "model", "placement", "weight_alloc", "weight_mem"], sort=False)[
        ["median_tokens_per_s", "bound_tokens_per_s"]].median() if not cases.empty else cases
    return faceted(ctx, "llm_placement", rows, "no LLM placement finished", _llm_grid)


def _llm_grid(rows: pd.DataFrame) -> Grid:
    names = [f"{model}, {name}: {mem or '?'} ({alloc})" for _, model, name, alloc, mem in rows.index]

    def draw(ax: Axes, _: str) -> None:
        series = {"measured (median)": rows["median_tokens_per_s"].to_numpy(dtype=float),
                  "memory-time bound": rows["bound_tokens_per_s"].to_numpy(dtype=float)}
        _dots(ax, names, series, Styles(), "tokens/s, batch 1 decode (log)", ("placement", "tokens_per_s"))
    return _dot_grid([""], [names], draw, str, "LLM decode by placement of the weights")


def _tables(runs: RunSet) -> list[str]:
    lines: list[str] = []
    cases = ok(runs.table("stream/cases"))
    cpu = cases[cases["pu_kind"] == "cpu"] if not cases.empty else cases
    if not cpu.empty:
        rows = []
        for (host, pu, mem, alloc), part in cpu.groupby(["host", "pu", "mem", "alloc"], sort=False):
            best = part.groupby("kernel")["best_GBps"].max()
            triad = part[part["kernel"] == "triad"]
            t: int | str = int(triad.loc[triad["best_GBps"].idxmax(), "threads"]) if not triad.empty else -1
            if sweep_incomplete(part).any():
                t = f"{t} (sweep incomplete)"
            rows.append([host, pu, mem, alloc, *[num(best.get(k)) for k in CPU_KERNELS], t])
        lines += ["### STREAM (CPU), best GB/s over the thread sweep", ""]
        lines += markdown(["host", "cores", "memory", "alloc", *CPU_KERNELS, "best threads (triad)"], rows)
    gpu = _gpu_table(runs)
    if not gpu.empty:
        lines += ["### GPU stream kernels under placement, best GB/s", ""]
        lines += markdown(["host", "GPU", "arrays in", *GPU_KERNELS],
                          [[h, pu, _placement(mem, alloc), *[num(v) for v in row]]
                           for (h, pu, mem, alloc), row in zip(gpu.index, gpu.to_numpy())])
    gemm = ok(runs.table("gemm/cases"))
    if not gemm.empty:
        largest = gemm.loc[gemm.groupby(["host", "dtype", "a_mem", "a_alloc"])["n"].idxmax()]
        lines += ["### GEMM at the largest size per type and placement", ""]
        lines += markdown(["host", "dtype", "n", "A, B in", "median TFLOP/s", "peak model", "fraction of peak"],
                          [[r.host, r.dtype, int(r.n), _placement(r.a_mem, r.a_alloc), num(r.median_TFLOPs, 2),
                            num(r.peak_TFLOPs, 0), num(r.fraction_of_peak, 3)] for r in largest.itertuples()])
    llm = ok(runs.table("llm/cases"))
    if not llm.empty:
        # The bound at mempath's read of the weights' memory in these files (Fig. 17's rule),
        # not the one the LLM script wrote.
        llm = llm_bounds(runs, llm, "weight_mem")
        llm = llm.assign(fraction_of_bound=llm["median_tokens_per_s"] / llm["bound_tokens_per_s"])
        lines += ["### LLM decode by weight placement", ""]
        lines += markdown(["host", "model", "weights (GB)", "placement", "weights in", "tokens/s", "path GB/s",
                         "bound tokens/s", "fraction of bound", "same tokens"],
                        [[r.host, r.model, num(r.weight_bytes / 1e9, 2), r.placement,
                          f"{r.weight_placement or r.weight_mem} `{r.weight_alloc}`", num(r.median_tokens_per_s, 2),
                          num(r.path_GBps), num(r.bound_tokens_per_s, 2), num(r.fraction_of_bound, 2),
                          "yes" if r.verified == 1 else "no"] for r in llm.itertuples()])
    for family in ("stream", "gemm", "llm"):
        cases = runs.table(f"{family}/cases")
        bad = cases[cases["status"] != "ok"] if "status" in cases else cases.iloc[0:0]
        if not bad.empty:
            keys = [c for c in ("host", "pu", "gpu", "model", "placement", "mem", "a_mem", "alloc", "a_alloc", "dtype", "n")
                    if c in bad]
            grouped = bad.groupby(keys + ["status", "reason"], dropna=False).size().reset_index()
            lines += [f"### `{family}` cases not measured", ""]
            lines += markdown(keys + ["status", "reason"], grouped[keys + ["status", "reason"]].astype(str).values.tolist())
    return lines


#: The section's figures in order: (table that must hold cases, item key, only where a node
#: has a GPU).
FIGURES = (("stream/cases", "stream_threads", False), ("stream/cases", "stream_gpu_placement", True),
           ("gemm/cases", "gemm_sweep", False), ("llm/cases", "llm_placement", False),
           ("llm/cases", "llm_offload", True))


def write(ctx: Context, gpus: bool = True) -> Part:
    """``gpus``: a node of the runs has a GPU; else a missing GPU figure is no news. A
    figure of a family the runs did not measure is left out without a word."""
    part = Part()
    for table, key, gpu_only in FIGURES:
        if not ctx.table(table).empty and (gpus or not gpu_only):
            part.add_item(ctx, key)
    part.lines += _tables(ctx.runs)
    return part


@item("applications", "", "Applications (STREAM, GEMM, LLM)", "section",
      ("stream/cases", "gemm/cases", "llm/cases"), "", order=50)
def _section(ctx: Context) -> Part:
    return write(ctx, bool(ctx.gpu_hosts()))
