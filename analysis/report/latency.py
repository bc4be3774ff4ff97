"""Report part for `mempath chase` and `mempath pingpong` (issue 4): latency against
buffer size per processor with the cache sizes drawn as vertical lines (the paper's
Figures 11-12), random against sequential chains (the prefetcher test), the ping-pong
matrix per flag memory (Figure 13) and the round-trip distributions.

Several runs: the figures show the median over the runs of one node, the tables list
every run (with a `run` column when there is more than one)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm

from ..render.figures import annotate, figure_grid, save
from ..results.io import RunSet
from .scaleout import bytes_axis
from ..render.tables import markdown, num
from ..results.transfers import size_label
from .sections import Context, Part, ok, section

CHASE_PATH = ["host", "pu", "cpu", "mem", "alloc"]
NOT_OK = {"skipped": "skip", "failed": "failed"}


def _agent(pu: str, cpu) -> str:
    # cpuN names a NUMA node: `--cpu` may chase (or ping) from any of its cores.
    return f"{pu} core {int(cpu)}" if pd.notna(cpu) and int(cpu) >= 0 else str(pu)


def _ns(value: float) -> str:
    for scale, unit in ((1e6, "ms"), (1e3, "us")):
        if value >= scale:
            return f"{value / scale:.2f}{unit}"
    return f"{value:.0f}ns"


def _medians(cases: pd.DataFrame, keys: list[str]) -> pd.Series:
    """median_ns per key and size, the median over runs."""
    return cases.groupby([*keys, "size_bytes"])["median_ns"].median()


def chase_latency(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("chase/cases"))
    cases = cases[cases["pattern"] == "random"] if not cases.empty else cases
    if cases.empty:
        return []
    caches = runs.table("chase/caches")
    lines = _medians(cases, CHASE_PATH)
    panels = list(dict.fromkeys(k[:3] for k in lines.index))
    fig, axes = figure_grid(1, len(panels), 6.5, 4.8)
    for ax, (host, pu, cpu) in zip(axes[0], panels):
        for (mem, alloc), line in lines.loc[host, pu, cpu].groupby(level=["mem", "alloc"], sort=False):
            ax.plot(line.index.get_level_values("size_bytes"), line.to_numpy(), marker=".", label=f"{mem} ({alloc})")
        mine = caches[(caches["host"] == host) & (caches["pu"] == pu)] if not caches.empty else caches
        # /chase/caches has no core column: one size per level of the processor.
        for level, size in dict(zip(mine.get("level", []), mine.get("bytes", []))).items():
            ax.axvline(int(size), color="grey", linestyle=":", linewidth=1)
            ax.annotate(f"{level} {size_label(size)}", (int(size), 1), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize="small", color="grey")
        bytes_axis(ax)
        ax.set_yscale("log")
        ax.set(title=f"{host} {_agent(pu, cpu)}: pointer chase", xlabel="buffer (bytes)",
               ylabel="ns per load (median)")
        ax.legend(fontsize="small")
    return save(fig, out, "chase_latency")


def chase_prefetch(runs: RunSet, out: Path) -> list[Path]:
    cases = ok(runs.table("chase/cases"))
    if cases.empty:
        return []
    both = cases.groupby(CHASE_PATH).filter(lambda g: set(g["pattern"]) >= {"random", "sequential"})
    if both.empty:
        return []
    lines = _medians(both, [*CHASE_PATH, "pattern"])
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    for key, line in lines.groupby(level=[*CHASE_PATH, "pattern"], sort=False):
        host, pu, cpu, mem, alloc, pattern = key
        ax.plot(line.index.get_level_values("size_bytes"), line.to_numpy(), "-" if pattern == "random" else "--",
                marker=".", label=f"{_agent(pu, cpu)} {mem} ({alloc}) {pattern}")
    bytes_axis(ax)
    ax.set_yscale("log")
    ax.set(title="Random vs sequential chain: what a prefetcher hides", xlabel="buffer (bytes)",
           ylabel="ns per load (median)")
    ax.legend(fontsize="small")
    return save(fig, out, "chase_prefetch")


def _cells(part: pd.DataFrame) -> dict[tuple[str, str], tuple[float, str]]:
    """(a, b) -> (median ns over the runs' ok cases, text); no ok case: its status."""
    cells = {}
    for (a, b), g in part.groupby(["a", "b"], sort=False):
        ok = g.loc[g["status"] == "ok", "median_ns"].astype(float)
        cells[a, b] = (ok.median(), _ns(ok.median())) if len(ok) else (np.nan, NOT_OK.get(g["status"].iloc[0], "?"))
    return cells


def pingpong_matrix(runs: RunSet, out: Path) -> list[Path]:
    cases = runs.table("pingpong/cases")
    if cases.empty or (cases["status"] == "ok").sum() == 0:
        return []
    flags = list(dict.fromkeys(zip(cases["host"], cases["mem"], cases["alloc"])))
    cols = min(4, len(flags))
    rows = (len(flags) + cols - 1) // cols
    fig, axes = figure_grid(rows, cols, 4.6, 4.2)
    ok = cases[cases["status"] == "ok"]["median_ns"].astype(float)
    norm = LogNorm(ok.min(), max(ok.max(), 1.01 * ok.min()))  # one scale for every flag memory
    for ax in axes.flat[len(flags):]:
        ax.set_visible(False)
    for ax, (host, mem, alloc) in zip(axes.flat, flags):
        mine = cases[cases["host"] == host]
        part = mine[(mine["mem"] == mem) & (mine["alloc"] == alloc)]
        agents = list(dict.fromkeys(list(mine["a"]) + list(mine["b"])))  # same order in every panel
        grid = np.full((len(agents), len(agents)), np.nan)
        text = [["" for _ in agents] for _ in agents]
        cells = _cells(part)
        for (a, b), (value, label) in cells.items():
            i, j = agents.index(a), agents.index(b)
            # A round trip is the same both ways: mirror unless b->a was measured itself.
            for x, y in {(i, j)} | ({(j, i)} if (b, a) not in cells else set()):
                grid[x, y], text[x][y] = value, label
        annotate(ax, grid, text, "round trip, ns", norm)
        ax.set_xticks(range(len(agents)), agents)
        ax.set_yticks(range(len(agents)), agents)
        ax.set(xlabel="b", ylabel="a (initiates)", facecolor="0.9")
        ax.set_title(f"{host}: flag in {mem} ({alloc})", fontsize="medium")
    fig.suptitle("CAS ping-pong round trip, median over runs (cpuN x cpuN: two cores of node N)")
    return save(fig, out, "pingpong_matrix")


def pingpong_distribution(runs: RunSet, out: Path) -> list[Path]:
    """One ECDF per pair and flag memory, the samples of every run of it pooled (so 100
    nightly runs draw as many lines as one), drawn through at most 1000 quantiles."""
    cases = ok(runs.table("pingpong/cases"))
    samples = runs.table("pingpong/samples")
    if cases.empty or samples.empty:
        return []
    keys = ["host", "a", "b", "mem", "alloc"]
    pooled = samples.merge(cases[["run", "case_id", *keys[1:]]], on=["run", "case_id"])  # samples carry host
    if pooled.empty:
        return []
    many_hosts = cases["host"].nunique() > 1
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    q = np.linspace(0, 1, 1000)
    marks = cases.groupby(keys, sort=False)[["median_ns", "p99_ns"]].median()  # the cases' own, over runs
    for key, part in pooled.groupby(keys, sort=False):
        rtt = part["rtt_ns"].to_numpy(dtype=float)
        host, a, b, mem, alloc = key
        label = f"{host}: " * many_hosts + f"{a}<->{b} {mem}/{alloc}" + (f" ({part['run'].nunique()} runs)"
                                                                         if part["run"].nunique() > 1 else "")
        line, = ax.plot(np.quantile(rtt, q), q, label=label)
        ax.plot([marks.loc[key, "median_ns"]], [0.5], "o", color=line.get_color(), markersize=4)
        ax.plot([marks.loc[key, "p99_ns"]], [0.99], "^", color=line.get_color(), markersize=4)
    ax.set_xscale("log")
    ax.set(title="Ping-pong round trips: distribution (o median, ^ p99)", xlabel="round trip (ns)",
           ylabel="fraction of round trips")
    ax.legend(fontsize="x-small", ncol=2)
    return save(fig, out, "pingpong_distribution")


def _tables(runs: RunSet) -> list[str]:
    lines: list[str] = []
    chased = ok(runs.table("chase/cases"))
    if not chased.empty:
        many = chased["run"].nunique() > 1
        top = chased.loc[chased.groupby(["run", *CHASE_PATH, "pattern"], sort=False)["size_bytes"].idxmax()]
        lines += ["### Pointer chase at the largest size", ""] + markdown(
            ["run"] * many + ["host", "processor", "memory", "allocator", "pattern", "size", "ns per load",
                              "GPU cycles"],
            [[r.run] * many + [r.host, _agent(r.pu, r.cpu), r.mem, r.alloc, r.pattern, size_label(r.size_bytes),
                               num(r.median_ns), num(r.median_cycles, 0)] for r in top.itertuples()])
    pp = runs.table("pingpong/cases")
    if not pp.empty:
        many = pp["run"].nunique() > 1
        lines += ["### Ping-pong round trips", ""] + markdown(
            ["run"] * many + ["host", "a", "b", "flag memory", "allocator", "median ns", "p99 ns", "mean ns",
                              "status"],
            [[r.run] * many + [r.host, _agent(r.a, r.a_cpu), _agent(r.b, r.b_cpu), r.mem, r.alloc,
                               num(r.median_ns, 0), num(r.p99_ns, 0), num(r.mean_ns, 0),
                               r.status + (f": {r.reason}" if r.reason else "")] for r in pp.itertuples()])
    return lines


def write(runs: RunSet, out: Path) -> Part:
    part = Part()
    part.add_figure("chase_latency", "Pointer-chase latency by buffer size", chase_latency(runs, out),
                    "no random `mempath chase` case finished")
    part.add_figure("chase_prefetch", "Random vs sequential chase", chase_prefetch(runs, out),
                    "no path was chased in both orders (`--pattern random,sequential`)")
    part.add_figure("pingpong_matrix", "Ping-pong matrix", pingpong_matrix(runs, out),
                    "no `mempath pingpong` case finished")
    part.add_figure("pingpong_distribution", "Ping-pong round-trip distributions", pingpong_distribution(runs, out),
                    "no `mempath pingpong` samples of a finished case")
    part.lines += _tables(runs)
    return part


@section("latency", "Latency (pointer chase, ping-pong)",
         ("chase/cases", "chase/caches", "pingpong/cases", "pingpong/samples"), order=30)
def _section(ctx: Context) -> Part:
    part = write(ctx.runs, ctx.out)
    if not (part.files or part.lines):  # runs without chase or pingpong need no word about them
        part.missing = []
    return part
