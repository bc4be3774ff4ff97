"""Report part for `mempath chase` and `mempath pingpong` (issue 4): latency against
buffer size per processor with the cache sizes drawn as vertical lines (the paper's
Figures 11-12), random against sequential chains (the prefetcher test), the ping-pong
matrix per flag memory (Figure 13) and the round-trip distributions."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm

from .figures import _annotate, _save
from .io import RunSet
from .scaleout import _bytes_axis
from .unified import Part, _ok


def _chase_panels(cases: pd.DataFrame) -> list[tuple[str, str]]:
    return list(dict.fromkeys(zip(cases["host"], cases["pu"])))


def chase_latency(runs: RunSet, out: Path) -> list[Path]:
    cases = _ok(runs.table("chase/cases"))
    cases = cases[cases["pattern"] == "random"] if not cases.empty else cases
    if cases.empty:
        return []
    caches = runs.table("chase/caches")
    panels = _chase_panels(cases)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False, layout="constrained")
    for ax, (host, pu) in zip(axes[0], panels):
        part = cases[(cases["host"] == host) & (cases["pu"] == pu)]
        for (mem, alloc), line in part.groupby(["mem", "alloc"]):
            line = line.groupby("size_bytes")["median_ns"].median()
            ax.plot(line.index, line.to_numpy(), marker=".", label=f"{mem} ({alloc})")
        mine = caches[(caches["host"] == host) & (caches["pu"] == pu)] if not caches.empty else caches
        for level, size in dict(zip(mine.get("level", []), mine.get("bytes", []))).items():
            ax.axvline(int(size), color="grey", linestyle=":", linewidth=1)
            ax.annotate(level, (int(size), 1), xycoords=("data", "axes fraction"), rotation=90, va="top",
                        ha="right", fontsize="small", color="grey")
        _bytes_axis(ax)
        ax.set_yscale("log")
        ax.set(title=f"{host} {pu}: pointer chase", xlabel="buffer (bytes)", ylabel="ns per load (median)")
        ax.legend(fontsize="small")
    return _save(fig, out, "chase_latency")


def chase_prefetch(runs: RunSet, out: Path) -> list[Path]:
    cases = _ok(runs.table("chase/cases"))
    if cases.empty:
        return []
    both = cases.groupby(["host", "pu", "mem", "alloc"]).filter(lambda g: set(g["pattern"]) >= {"random", "sequential"})
    if both.empty:
        return []
    keys = list(dict.fromkeys(zip(both["host"], both["pu"], both["mem"], both["alloc"])))
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    for key in keys:
        part = both[(both["host"] == key[0]) & (both["pu"] == key[1]) & (both["mem"] == key[2]) & (both["alloc"] == key[3])]
        for pattern, style in (("random", "-"), ("sequential", "--")):
            line = part[part["pattern"] == pattern].groupby("size_bytes")["median_ns"].median()
            ax.plot(line.index, line.to_numpy(), style, marker=".", label=f"{key[1]} {key[2]} ({key[3]}) {pattern}")
    _bytes_axis(ax)
    ax.set_yscale("log")
    ax.set(title="Random vs sequential chain: what a prefetcher hides", xlabel="buffer (bytes)",
           ylabel="ns per load (median)")
    ax.legend(fontsize="small")
    return _save(fig, out, "chase_prefetch")


def pingpong_matrix(runs: RunSet, out: Path) -> list[Path]:
    cases = runs.table("pingpong/cases")
    if cases.empty or (cases["status"] == "ok").sum() == 0:
        return []
    flags = list(dict.fromkeys(zip(cases["host"], cases["mem"], cases["alloc"])))
    cols = min(4, len(flags))
    rows = (len(flags) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.2 * rows), squeeze=False, layout="constrained")
    ok = cases[cases["status"] == "ok"]["median_ns"].astype(float)
    norm = LogNorm(ok.min(), max(ok.max(), 1.01 * ok.min()))  # one scale for every flag memory
    for ax in axes.flat[len(flags):]:
        ax.set_visible(False)
    for ax, (host, mem, alloc) in zip(axes.flat, flags):
        part = cases[(cases["host"] == host) & (cases["mem"] == mem) & (cases["alloc"] == alloc)]
        agents = list(dict.fromkeys(list(part["a"]) + list(part["b"])))
        grid = np.full((len(agents), len(agents)), np.nan)
        text = [["" for _ in agents] for _ in agents]
        for r in part.itertuples():
            i, j = agents.index(r.a), agents.index(r.b)
            for x, y in {(i, j), (j, i)}:  # a round trip is the same both ways
                if r.status == "ok":
                    grid[x, y] = float(r.median_ns)
                    text[x][y] = f"{float(r.median_ns) / 1000:.2f}us" if r.median_ns >= 1000 else f"{r.median_ns:.0f}ns"
                else:
                    text[x][y] = "skip"
        _annotate(ax, grid, text, "round trip, ns", norm)
        ax.set_xticks(range(len(agents)), agents)
        ax.set_yticks(range(len(agents)), agents)
        ax.set_title(f"{host}: flag in {mem} ({alloc})", fontsize="medium")
    fig.suptitle("CAS ping-pong round trip, median (a initiates; shown both ways)")
    return _save(fig, out, "pingpong_matrix")


def pingpong_distribution(runs: RunSet, out: Path) -> list[Path]:
    cases = _ok(runs.table("pingpong/cases"))
    samples = runs.table("pingpong/samples")
    if cases.empty or samples.empty:
        return []
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    for r in cases.itertuples():
        rtt = samples[(samples["run"] == r.run) & (samples["case_id"] == r.case_id)]["rtt_ns"].to_numpy()
        if rtt.size == 0:
            continue
        x = np.sort(rtt)
        line, = ax.plot(x, np.arange(1, x.size + 1) / x.size, label=f"{r.a}<->{r.b} {r.mem}/{r.alloc}")
        ax.plot([r.median_ns], [0.5], "o", color=line.get_color(), markersize=4)
        ax.plot([r.p99_ns], [0.99], "^", color=line.get_color(), markersize=4)
    ax.set_xscale("log")
    ax.set(title="Ping-pong round trips: distribution (o median, ^ p99)", xlabel="round trip (ns)",
           ylabel="fraction of round trips")
    ax.legend(fontsize="x-small", ncol=2)
    return _save(fig, out, "pingpong_distribution")


def _tables(runs: RunSet) -> list[str]:
    lines: list[str] = []
    chase = runs.table("chase/cases")
    ok = _ok(chase)
    if not ok.empty:
        top = ok.loc[ok.groupby(["host", "pu", "mem", "alloc", "pattern"])["size_bytes"].idxmax()]
        lines += ["| host | processor | memory | allocator | pattern | size | ns per load | GPU cycles |",
                  "|---|---|---|---|---|---:|---:|---:|"]
        for r in top.itertuples():
            cycles = "" if pd.isna(r.median_cycles) else f"{r.median_cycles:.0f}"
            lines.append(f"| {r.host} | {r.pu} | {r.mem} | {r.alloc} | {r.pattern} | {int(r.size_bytes) >> 20} MiB | "
                         f"{r.median_ns:.1f} | {cycles} |")
        lines.append("")
    pp = runs.table("pingpong/cases")
    if not pp.empty:
        lines += ["| host | a | b | flag memory | allocator | median ns | p99 ns | mean ns | status |",
                  "|---|---|---|---|---|---:|---:|---:|---|"]
        for r in pp.itertuples():
            nums = (f"{r.median_ns:.0f} | {r.p99_ns:.0f} | {r.mean_ns:.0f}" if r.status == "ok" else " |  | ")
            lines.append(f"| {r.host} | {r.a} | {r.b} | {r.mem} | {r.alloc} | {nums} | "
                         f"{r.status}{': ' + r.reason if r.reason else ''} |")
        lines.append("")
    return lines


def write(runs: RunSet, out: Path) -> Part:
    part = Part()
    for stem, title, files, why in (
            ("chase_latency", "Pointer-chase latency by buffer size", chase_latency(runs, out),
             "no random `mempath chase` case finished"),
            ("chase_prefetch", "Random vs sequential chase", chase_prefetch(runs, out),
             "no path was chased in both orders (`--pattern random,sequential`)"),
            ("pingpong_matrix", "Ping-pong matrix", pingpong_matrix(runs, out), "no `mempath pingpong` case finished"),
            ("pingpong_distribution", "Ping-pong round-trip distributions", pingpong_distribution(runs, out),
             "no `mempath pingpong` samples")):
        part.files += files
        if files:
            part.lines += [f"### {title}", "", f"![{title}]({stem}.png)", "", f"[PNG]({stem}.png), [PDF]({stem}.pdf)", ""]
        else:
            part.missing.append(f"{title} not drawn: {why}")
    part.lines += _tables(runs)
    return part
