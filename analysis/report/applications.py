"""Report part for the applications (issue 6): STREAM bandwidth by thread count with the
best thread count marked, the GPU stream kernels under placement (the paper's
BabelStream table), cuBLAS GEMM TFLOP/s by size per data type and operand placement
against the peak model (Figures 15-16), and LLM decode tokens/s per weight placement next
to its memory-time bound (Figure 17). Several runs: medians over the runs of one node."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..render.figures import figure_grid, save
from ..results.io import RunSet
from .sections import Context, Part, ok, section
from ..render.tables import markdown, num

CPU_KERNELS = ("copy", "scale", "add", "triad")
GPU_KERNELS = ("copy", "mul", "add", "triad", "dot")


def _placement(mem: str, alloc: str) -> str:
    return f"{mem} `{alloc}`"


def stream_threads(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("stream/cases"))
    cases = cases[(cases["pu_kind"] == "cpu") & (cases["sweep"] == 1)] if not cases.empty else cases
    if cases.empty:
        return []
    panels = list(dict.fromkeys(zip(cases["host"], cases["pu"], cases["mem"], cases["alloc"])))
    fig, axes = figure_grid(1, len(panels), 5.5, 4.2)
    for ax, (host, pu, mem, alloc) in zip(axes[0], panels):
        mine = cases[(cases["host"] == host) & (cases["pu"] == pu) & (cases["mem"] == mem) & (cases["alloc"] == alloc)]
        best = mine.groupby(["kernel", "threads"])["best_GBps"].median()
        for kernel in CPU_KERNELS:
            if kernel in best.index.get_level_values(0):
                line = best.loc[kernel]
                ax.plot(line.index, line.to_numpy(), marker="o", label=kernel)
        triad = best.loc["triad"] if "triad" in best.index.get_level_values(0) else pd.Series(dtype=float)
        if not triad.empty:
            t = int(triad.idxmax())
            ax.axvline(t, color="grey", linestyle=":")
            ax.annotate(f"best: {t} threads", (t, triad.max()), textcoords="offset points", xytext=(4, -12),
                        fontsize="small")
        ax.set_xscale("log", base=2)
        ax.set(title=f"{host} {pu} → {mem} ({alloc})", xlabel="threads", ylabel="best GB/s")
        ax.legend(fontsize="small")
    return save(fig, out, "stream_threads")


def _gpu_table(runs: RunSet) -> pd.DataFrame:
    cases = ok(runs.table("stream/cases"))
    cases = cases[cases["pu_kind"] == "gpu"] if not cases.empty else cases
    if cases.empty:
        return cases
    return cases.pivot_table(index=["host", "pu", "mem", "alloc"], columns="kernel", values="best_GBps",
                             aggfunc="median").reindex(columns=[k for k in GPU_KERNELS])


def stream_gpu_placement(runs: RunSet, out: Path) -> list[Path]:
    table = _gpu_table(runs)
    if table.empty:
        return []
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(table)), 4.2), layout="constrained")
    x = np.arange(len(table))
    width = 0.8 / len(GPU_KERNELS)
    for i, kernel in enumerate(GPU_KERNELS):
        ax.bar(x + (i - 2) * width, table[kernel].to_numpy(dtype=float), width, label=kernel)
    ax.set_xticks(x, [f"{pu} ← {mem}\n{alloc}" for _, pu, mem, alloc in table.index], fontsize="small")
    ax.set_yscale("log")
    ax.set(ylabel="best GB/s", title="GPU stream kernels by placement of the arrays")
    ax.legend(fontsize="small", ncols=5)
    return save(fig, out, "stream_gpu_placement")


def gemm_sweep(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("gemm/cases"))
    if cases.empty:
        return []
    dtypes = list(dict.fromkeys(cases["dtype"]))
    fig, axes = figure_grid(1, len(dtypes), 5.5, 4.2)
    for ax, dtype in zip(axes[0], dtypes):
        mine = cases[cases["dtype"] == dtype]
        for (host, mem, alloc), part in mine.groupby(["host", "a_mem", "a_alloc"], sort=False):
            line = part.groupby("n")["median_TFLOPs"].median()
            ax.plot(line.index, line.to_numpy(), marker="o", label=f"{mem} ({alloc})")
        peak = mine["peak_TFLOPs"].dropna()
        if not peak.empty:
            ax.axhline(float(peak.max()), color="black", linestyle="--", linewidth=1)
            ax.annotate(f"peak model {peak.max():.0f}", (0.02, float(peak.max())), xycoords=("axes fraction", "data"),
                        textcoords="offset points", xytext=(0, 3), fontsize="small")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set(title=f"GEMM {dtype}: A, B placed; C in HBM", xlabel="n (m = n = k)", ylabel="TFLOP/s (median)")
        ax.legend(fontsize="small")
    return save(fig, out, "gemm_sweep")


def llm_placement(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("llm/cases"))
    if cases.empty:
        return []
    rows = cases.groupby(["host", "model", "placement", "weight_alloc", "weight_mem"], sort=False)[
        ["median_tokens_per_s", "bound_tokens_per_s"]].median()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows)), 4.2), layout="constrained")
    x = np.arange(len(rows))
    ax.bar(x - 0.2, rows["median_tokens_per_s"], 0.4, label="measured")
    ax.bar(x + 0.2, rows["bound_tokens_per_s"], 0.4, label="memory-time bound", color="0.7")
    ax.set_xticks(x, [f"{model}\n{name}: {mem} ({alloc})" for _, model, name, alloc, mem in rows.index],
                  fontsize="small")
    ax.set_yscale("log")
    ax.set(ylabel="tokens/s (batch 1 decode)", title="LLM decode by placement of the weights")
    ax.legend(fontsize="small")
    return save(fig, out, "llm_placement")


def _tables(runs: RunSet) -> list[str]:
    lines: list[str] = []
    cases = ok(runs.table("stream/cases"))
    cpu = cases[cases["pu_kind"] == "cpu"] if not cases.empty else cases
    if not cpu.empty:
        rows = []
        for (host, pu, mem, alloc), part in cpu.groupby(["host", "pu", "mem", "alloc"], sort=False):
            best = part.groupby("kernel")["best_GBps"].max()
            triad = part[part["kernel"] == "triad"]
            t = int(triad.loc[triad["best_GBps"].idxmax(), "threads"]) if not triad.empty else -1
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


def write(runs: RunSet, out: Path, gpus: bool = True) -> Part:
    """``gpus``: a node of the runs has a GPU; else a missing GPU figure is no news."""
    part = Part()
    has_stream = not runs.table("stream/cases").empty
    has_gemm = not runs.table("gemm/cases").empty
    has_llm = not runs.table("llm/cases").empty
    if has_stream:
        part.add_figure("stream_threads", "STREAM by thread count", stream_threads(runs, out),
                        "no CPU thread sweep of `mempath stream` finished")
        if gpus:
            part.add_figure("stream_gpu_placement", "GPU stream kernels by placement", stream_gpu_placement(runs, out),
                            "no GPU case of `mempath stream` finished")
    if has_gemm:
        part.add_figure("gemm_sweep", "GEMM TFLOP/s by size and operand placement", gemm_sweep(runs, out),
                        "no `mempath gemm` case finished")
    if has_llm:
        part.add_figure("llm_placement", "LLM decode by weight placement", llm_placement(runs, out),
                        "no LLM placement finished")
    part.lines += _tables(runs)
    return part


@section("applications", "Applications (STREAM, GEMM, LLM)",
         ("stream/cases", "gemm/cases", "llm/cases"), order=50)
def _section(ctx: Context) -> Part:
    return write(ctx.runs, ctx.out, bool(ctx.gpu_hosts()))
