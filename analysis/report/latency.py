"""Report part for `mempath chase` and `mempath pingpong`: the paper's Fig. 12 (latency
against buffer size, caches marked) and Fig. 13 (the ping-pong matrix per flag memory),
drawn by their items (analysis/figures/latency.py); random against sequential chains (the
prefetcher test) and the round-trip distributions, the report's own.

Several runs: the figures show the median over the runs of one node, the tables list
every run (with a `run` column when there is more than one)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ..model.roles import role_label, role_rank
from ..render import style
from ..render.figures import COLUMN_IN, PAGE_IN, Styles, bytes_axis, headed
from ..results.io import RunSet
from ..render.tables import markdown, num
from ..results.transfers import size_label
from ..render.items import Context, Drawn, Grid, faceted, item, mark
from .sections import Part, ok

CHASE_PATH = ["host", "pu", "cpu", "mem", "alloc"]
PAIR = ["host", "a", "b", "mem", "alloc"]  # a ping-pong curve
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


def _labels(lines: pd.Series, topos: dict, keys: list[str]) -> dict[tuple, str]:
    """(host, pu, mem, alloc) -> the line's label: the memory's role seen from the
    processor, with the allocator where one role is chased with several (``device memory,
    managed`` from a CPU, ``device memory, device`` from a GPU)."""
    at = [keys.index(k) for k in ("host", "pu", "mem", "alloc")]
    roles = {key: role_label(topos.get(key[0]), key[1], key[2])
             for key in {tuple(k[i] for i in at) for k in lines.index}}
    allocs: dict[str, set[str]] = {}
    for key, r in roles.items():
        allocs.setdefault(r, set()).add(key[3])
    return {k: f"{r}, {k[3]}" if len(allocs[r]) > 1 else r for k, r in roles.items()}


def _agent_title(host: str, pu: str, cpu, many_hosts: bool) -> str:
    return f"{host}: {_agent(pu, cpu)}" if many_hosts else _agent(pu, cpu)


@item("chase_prefetch", "", "Random vs sequential chase", "figure", (), "", order=30.1)
def chase_prefetch(ctx: Context) -> Drawn:
    """Random against sequential chases of the same path: one panel per processor, one line
    per memory (role) and order."""
    cases = ok(ctx.table("chase/cases"))
    both = cases.groupby(CHASE_PATH).filter(lambda g: set(g["pattern"]) >= {"random", "sequential"}) \
        if not cases.empty else cases
    return faceted(ctx, "chase_prefetch", both, "no path was chased in both orders (`--pattern random,sequential`)",
                   lambda both: _prefetch_grid(ctx, both))


def _prefetch_grid(ctx: Context, both: pd.DataFrame) -> Grid:
    lines = _medians(both, [*CHASE_PATH, "pattern"])
    labels = _labels(lines, ctx.topologies, [*CHASE_PATH, "pattern", "size_bytes"])
    panels = list(dict.fromkeys(k[:3] for k in lines.index))
    many_hosts = len({h for h, _, _ in panels}) > 1
    styles = Styles()

    def draw(ax: Axes, panel: tuple) -> None:
        host, pu, cpu = panel
        drawn = [(f"{labels[host, pu, mem, alloc]}, {pattern}", line) for (mem, alloc, pattern), line in
                 lines.loc[host, pu, cpu].groupby(level=["mem", "alloc", "pattern"], sort=False)]
        for label, line in sorted(drawn, key=lambda entry: role_rank(entry[0])):
            sizes = line.index.get_level_values("size_bytes")
            ax.plot(sizes, line.to_numpy(), label=label, **styles(label))
            mark(ax, label, size_bytes=sizes.to_numpy(), median_ns=line.to_numpy())
        bytes_axis(ax, sorted(set(lines.loc[host, pu, cpu].index.get_level_values("size_bytes"))))
        style.log_axis(ax, "y")
        ax.grid(True, which="major")
        ax.set(xlabel="buffer size (bytes, log2)", ylabel="ns per load (median)")
    return Grid(panels, draw, lambda p: _agent_title(*p, many_hosts), PAGE_IN if len(panels) > 1 else COLUMN_IN,
                max_cols=3, finish=headed("Random vs sequential chase: what a prefetcher hides"))


def _superchip(topology, agent: str):
    """The GPU whose superchip an agent is on (a CPU: the GPU of its NUMA node), else the name."""
    procs = {p["name"]: p for p in (topology or {}).get("processors", [])}
    p = procs.get(agent, {})
    if p.get("kind") == "gpu":
        return p.get("gpu")
    gpus = [q.get("gpu") for q in procs.values() if q.get("kind") == "gpu" and q.get("host_numa") == p.get("numa")]
    return gpus[0] if gpus and p.get("numa") is not None else agent


def _pair_class(topology, a: str, b: str) -> str:
    """``CPU-GPU, one superchip``: the kind of a pair, for figures with too many pairs to
    name each."""
    kinds = "-".join(sorted(("GPU" if x.startswith("gpu") else "CPU") for x in (a, b)))
    if a == b:
        return f"{kinds}, one {'GPU' if a.startswith('gpu') else 'socket'}"
    one = _superchip(topology, a) == _superchip(topology, b)
    if kinds == "CPU-CPU":
        return f"{kinds}, {'one socket' if one else 'two sockets'}"
    if kinds == "GPU-GPU":
        return f"{kinds}, two GPUs"
    return f"{kinds}, {'one superchip' if one else 'two superchips'}"


@item("pingpong_distribution", "", "Ping-pong round-trip distributions", "figure", (), "", order=30.2)
def pingpong_distribution(ctx: Context) -> Drawn:
    """One ECDF per pair and flag memory, the samples of every run of it pooled (so 100
    nightly runs draw as many lines as one), drawn through at most 1000 quantiles, with
    marks at the cases' median and p99. Up to 8 curves: one panel, each curve named; more:
    one panel per flag memory, the curves by the kind of pair (the matrix names each)."""
    cases = ok(ctx.table("pingpong/cases"))
    samples = ctx.table("pingpong/samples")
    pooled = samples.iloc[0:0]
    if not (cases.empty or samples.empty):  # samples carry host
        pooled = samples.merge(cases[["run", "case_id", *PAIR[1:]]], on=["run", "case_id"])
    named = pooled.groupby(PAIR, sort=False).ngroups <= len(style.PALETTE) if not pooled.empty else True
    note = "" if named else ("Curves by the kind of pair (pairs of one kind share a look); the ping-pong matrix "
                             "and the table below give each pair.")
    return faceted(ctx, "pingpong_distribution", pooled, "no `mempath pingpong` samples of a finished case",
                   lambda pooled: _distribution_grid(ctx, cases, pooled, named), notes=[note] if note else [])


def _distribution_grid(ctx: Context, cases: pd.DataFrame, pooled: pd.DataFrame, named: bool) -> Grid:
    many_hosts = cases["host"].nunique() > 1
    curves = list(pooled.groupby(PAIR, sort=False))
    flags = list(dict.fromkeys(k[0:1] + k[3:] for k, _ in curves)) if not named else [None]
    q = np.linspace(0, 1, 1000)
    marks = cases.groupby(PAIR, sort=False)[["median_ns", "p99_ns"]].median()  # the cases' own, over runs
    styles, labels = Styles(), {}
    for key, part in curves:  # the looks in curve order, whichever panel draws a curve first
        host, a, b, mem, alloc = key
        runs_of = part["run"].nunique()
        labels[key] = (f"{host}: " * many_hosts + f"{a}<->{b} {mem}/{alloc}" + (f" ({runs_of} runs)" if runs_of > 1
                                                                                  else "")
                       if named else _pair_class(ctx.topologies.get(host), a, b))
        styles(labels[key])

    def draw(ax: Axes, flag: tuple | None) -> None:
        for key, part in curves:
            host, a, b, mem, alloc = key
            if flag is not None and flag != (host, mem, alloc):
                continue
            look = styles(labels[key])
            rtt = np.quantile(part["rtt_ns"].to_numpy(dtype=float), q)
            ax.plot(rtt, q, label=labels[key], color=look["color"], linestyle=look["linestyle"],
                    marker=look["marker"], markevery=[])
            ax.plot([marks.loc[key, "median_ns"], marks.loc[key, "p99_ns"]], [0.5, 0.99], linestyle="none",
                    marker=look["marker"], color=look["color"])
            mark(ax, labels[key], round_trip_ns=rtt, fraction_of_round_trips=q)
        style.log_axis(ax, "x")
        ax.set_ylim(0, 1.02)
        ax.grid(True, which="major")
        ax.set(xlabel="round trip (ns)", ylabel="fraction of round trips")

    def title(flag: tuple | None) -> str:
        return "" if flag is None else (f"{flag[0]}: " * many_hosts + f"flag in {flag[1]} ({flag[2]})")
    return Grid(flags, draw, title, COLUMN_IN if len(flags) == 1 else PAGE_IN, max_cols=3,
                finish=headed("Ping-pong round trips: distribution (marks: median, p99)"))


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


#: The paper's figures this section shows (analysis/figures/latency.py): Fig. 12, latency
#: against buffer size with the caches marked, and Fig. 13, the ping-pong matrix.
SHARED = ("latency_by_size", "pingpong")


def write(ctx: Context) -> Part:
    part = Part()
    for key in ("latency_by_size", "chase_prefetch", "pingpong", "pingpong_distribution"):
        part.add_item(ctx, key)
    part.lines += _tables(ctx.runs)
    return part


@item("latency", "", "Latency (pointer chase, ping-pong)", "section",
      ("chase/cases", "chase/caches", "pingpong/cases", "pingpong/samples"), "", order=30)
def _section(ctx: Context) -> Part:
    part = write(ctx)
    if not (part.files or part.lines):  # runs without chase or pingpong need no word about them
        part.missing = []
    return part
