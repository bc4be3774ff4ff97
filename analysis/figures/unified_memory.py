"""Fig. 4: the time of one step of an application that interleaves CPU writes with a burst
of n back-to-back GPU memsets, against n, for system-allocated memory first placed on host
memory or on HBM and for managed memory (`mempath um --exp interleave`): what address
translation (ATS) and page migration cost each side."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ..model.roles import ROLE_ORDER, labelled, role
from ..model.vocabulary import HBM, HOST_WORDS
from ..render.style import PAGE_IN, log_log, series
from ..results.cases import drawn_under
from ..render.items import Comparison, Context, Drawn, Grid, faceted, item, mark
from .published import DEF_FIG4, NA, hold, of, run_facts

CPU_PHASES = ("cpu_memset", "cpu_page_stride")
ALLOC_WORDS = {"system": "system-allocated", "managed": "managed"}
COMMAND = "mempath um --exp interleave --mem sweep"


def _page_words(ctx: Context, runs: list[str]) -> str:
    sizes = {int(r.attrs.get("page_size") or 0) for r in ctx.runs.runs if r.name in runs}
    sizes.discard(0)
    if len(sizes) != 1:
        return "page"
    size = sizes.pop()
    return f"{size // 1024} KiB page" if size >= 1024 else f"{size} B page"


def step_times(samples: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """One row per case, CPU phase, burst length and repetition: ``step_s``, the time of the
    CPU phase and the burst after it. From ``app_time_s`` (one host clock around both) where
    the file has it, else the sum of the two phases' own times. Returns (rows, from_app)."""
    inter = samples[samples["experiment"] == "interleave"]
    keys = ["run", "host", "case_id", "iterations", "rep"]
    gpu = inter[(inter["phase"] == "gpu_memset") & inter["preceded_by"].isin(CPU_PHASES)]
    if "app_time_s" in gpu and np.isfinite(gpu["app_time_s"].astype(float)).any():
        rows = gpu[np.isfinite(gpu["app_time_s"].astype(float))]
        return rows.assign(cpu_phase=rows["preceded_by"], step_s=rows["app_time_s"].astype(float)), True
    cpu = inter[inter["phase"].isin(CPU_PHASES)][[*keys, "phase", "time_s"]]
    both = gpu.merge(cpu.rename(columns={"phase": "preceded_by", "time_s": "cpu_s"}),
                     on=[*keys, "preceded_by"])
    return both.assign(cpu_phase=both["preceded_by"],
                       step_s=both["time_s"].astype(float) + both["cpu_s"].astype(float)), False


def _first(row: pd.Series, topology: Mapping[str, Any]) -> str:
    """Where a case's pages were first: its first_placement where recorded, '' where not."""
    first = row.get("first_placement")
    if first is None or pd.isna(first) or not str(first):
        return ""
    return drawn_under(topology, str(row["mem"]), str(row["alloc"]), first)[0]


def _series_label(topology: dict, gpu: str, alloc: str, first: str) -> str:
    word = ALLOC_WORDS.get(alloc, alloc)
    if not first:
        return f"{word}, first placement not known"
    return f"{word}, first on {labelled(topology, gpu, first)}"


def _series_rank(topology: dict, gpu: str, alloc: str, first: str) -> tuple:
    r = role(topology, gpu, first) if first else ""
    return (0 if alloc == "system" else 1, ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER), first)


def _missing(ctx: Context, cases: pd.DataFrame, drawn: set[tuple[str, str, str, str]]) -> list[str]:
    """Why each of the paper's series (system memory first on host memory, first on HBM,
    managed memory) is absent for a host and GPU that ran the interleave experiment."""
    lines = []
    for (host, gpu), mine in cases.groupby(["host", "gpu"], sort=False):
        topology = ctx.topologies.get(host, {})
        have = {(a, role(topology, gpu, f).split(" ")[-1] if f else "") for h, g, a, f in drawn
                if h == host and g == gpu}
        proc = next((p for p in topology.get("processors", []) if p.get("name") == gpu), {})
        hbm = proc.get("hbm_numa")
        wanted = [("system", "host memory", HOST_WORDS), ("system", HBM, (HBM,)),
                  ("managed", "", None)]
        for alloc, where, words in wanted:
            if any(a == alloc and (words is None or w in words) for a, w in have):
                continue
            name = f"{ALLOC_WORDS[alloc]} memory" + (f" first placed on {where}" if where else "")
            failed = mine[(mine["alloc"] == alloc) & (mine["status"] != "ok")]
            ran = (alloc, "") in have
            if words == (HBM,) and (hbm is None or hbm < 0):
                why = f"{gpu}'s memory is no NUMA node here (only Grace Hopper shows HBM as one)"
            elif not failed.empty:
                why = f"{failed['status'].iloc[0]}: {failed['reason'].iloc[0] or 'no reason given'}"
            elif ran:
                why = ("drawn as 'first placement not known': the file does not record where the pages "
                       f"were first (first_placement); `{COMMAND}` records it")
            elif words == (HBM,):
                why = f"no case placed the buffer first on HBM (numa{hbm}): `{COMMAND}`"
            else:
                why = f"no {alloc} case ran: `{COMMAND}`"
            lines.append(f"{host} {gpu}, {name}: {why}")
    return lines


def _crossover(system: pd.Series, managed: pd.Series) -> float:
    """The smallest n from which managed memory's step is faster than system memory's at
    every larger n measured; NaN where it never is."""
    common = sorted(set(system.index) & set(managed.index))
    faster = [n for n in common if managed[n] < system[n]]
    for n in common:
        if all(m in faster for m in common if m >= n):
            return float(n)
    return math.nan


@item("ats_vs_managed", "Fig. 4", "Interleaved CPU and GPU writes: system-allocated (ATS) against managed memory",
      "figure", ("um/samples", "um/cases"), COMMAND, order=4)
def ats_vs_managed(ctx: Context) -> Drawn:
    samples, cases = ctx.table("um/samples"), ctx.table("um/cases")
    cases = cases[cases["experiment"] == "interleave"] if "experiment" in cases else cases.iloc[:0]
    if samples.empty or cases.empty:
        return Drawn(why_not=f"no interleave case in /um/cases; measured by `{COMMAND}`")
    steps, from_app = step_times(samples)
    case_cols = [c for c in ("run", "case_id", "alloc", "mem", "gpu", "first_placement", "status")
                 if c in cases]
    steps = steps.drop(columns=[c for c in ("alloc", "mem", "gpu", "first_placement") if c in steps])
    steps = steps.merge(cases[case_cols], on=["run", "case_id"])
    steps = steps[steps["status"] == "ok"]
    if steps.empty:
        return Drawn(why_not="no interleave case ran (" + "; ".join(
            f"{r.alloc}: {r.reason}" for r in cases.itertuples()) + f"); measured by `{COMMAND}`")
    firsts = {(r.run, r.case_id): _first(pd.Series(r._asdict()), ctx.topologies.get(r.host, {}))
              for r in cases.itertuples()}
    steps = steps.assign(first=[firsts.get((r, c), "") for r, c in zip(steps["run"], steps["case_id"])])
    # Median over the repetitions of a run, then over the runs.
    per_run = steps.groupby(["run", "host", "gpu", "alloc", "first", "cpu_phase", "iterations"])["step_s"].median()
    lines = per_run.groupby(level=["host", "gpu", "alloc", "first", "cpu_phase", "iterations"]).median().sort_index()
    # One style per series label across the panels (the legend joins them by label).
    labels = list(dict.fromkeys(
        _series_label(ctx.topologies.get(h, {}), g, a, f) for h, g, a, f, *_ in
        sorted(lines.index, key=lambda k: _series_rank(ctx.topologies.get(k[0], {}), k[1], k[2], k[3]))))
    groups = list(dict.fromkeys((h, g) for h, g, *_ in lines.index))
    several_hosts = len({h for h, _ in groups}) > 1
    keys = [(h, g, p) for h, g in groups for p in CPU_PHASES
            if p in lines.loc[h, g].index.get_level_values("cpu_phase")]
    page = _page_words(ctx, ctx.runs_of(steps))
    titles = {"cpu_memset": "CPU full write (memset)", "cpu_page_stride": f"CPU strided write (1 B per {page})"}
    drawn: set[tuple[str, str, str, str]] = set()
    published = of("fig4.managed_faster.iterations")[0]
    comparisons = [c for host, gpu, phase in keys if phase == "cpu_memset"
                   for c in _comparisons(ctx.topologies.get(host, {}), host, gpu, lines.loc[host, gpu], phase,
                                         published)]

    def draw(ax: Axes, panel: tuple[str, str, str]) -> None:
        host, gpu, phase = panel
        topology = ctx.topologies.get(host, {})
        part = lines.loc[host, gpu]
        present = list(dict.fromkeys((a, f) for a, f, p, _ in part.index if p == phase))
        present.sort(key=lambda af: _series_rank(topology, gpu, *af))
        for alloc, first in present:
            line = part.loc[alloc, first, phase].sort_index()
            label = _series_label(topology, gpu, alloc, first)
            ax.plot(line.index.to_numpy(), line.to_numpy() * 1e3, label=label, **series(labels.index(label)))
            mark(ax, label, gpu_memsets=line.index.to_numpy(), step_ms=line.to_numpy() * 1e3)
            drawn.add((host, gpu, alloc, first))
        ticks = sorted({int(n) for n in part.index.get_level_values("iterations")})
        log_log(ax, ticks, [str(t) for t in ticks], "back-to-back GPU memsets per step (n)", "time per step (ms)")

    def title(panel: tuple[str, str, str]) -> str:
        host, gpu, phase = panel
        return f"{host}: " * several_hosts + f"{gpu}, {titles[phase]}"

    sizes = sorted({int(s) for s in cases.loc[cases["status"] == "ok", "size_bytes"]})
    caption = [("Step = one CPU write phase then a burst of n back-to-back GPU cudaMemset calls over the same "
                "buffer; its time is " + ("one host clock from the CPU phase's start to the burst's end "
                                          "(app_time_s)" if from_app else
                                          "the CPU phase's time (steady clock) plus the burst's (CUDA events), "
                                          "each timed on its own (these files have no app_time_s)")
                + "; median over the repetitions, then over the runs. Log-log axes: lower is better."),
               f"Buffer: {', '.join(f'{s / 2**20:.0f} MiB' for s in sizes)}. Series are named by where the "
               "pages were right after the buffer's first touch (first_placement), as the role seen from the GPU; "
               "files without that column say the first placement was not recorded.",
               "Full write: memset of the whole buffer by one CPU core; strided write: one byte per page, the "
               "worst case for managed memory (one page moved per byte written)."]
    result = faceted(ctx, "ats_vs_managed", steps, "", lambda _: Grid(keys, draw, title, PAGE_IN, 2.1, max_cols=2),
                     caption=caption, comparisons=comparisons)
    result.why_not = "; ".join(_missing(ctx, cases, drawn))  # what the drawing left out
    return result


def _comparisons(topology: dict, host: str, gpu: str, part: pd.Series, phase: str, published) -> list[Comparison]:
    """The paper's crossover (managed faster from n = 128 on) against this run's, for each
    managed series beside system memory first placed on host memory."""
    out = []
    present = {(a, f) for a, f, p, _ in part.index if p == phase}
    systems = sorted((f for a, f in present if a == "system" and f
                      and role(topology, gpu, f).endswith(HOST_WORDS)),
                     key=lambda f: _series_rank(topology, gpu, "system", f))
    for system_first in systems[:1]:
        system = part.loc["system", system_first, phase]
        for alloc, first in sorted(present):
            if alloc != "managed":
                continue
            n = _crossover(system, part.loc[alloc, first, phase])
            if not math.isfinite(n):
                continue
            out.append(hold(
                "ats_vs_managed", published, n,
                f"{host} {gpu}, full write: n from which {_series_label(topology, gpu, alloc, first)} is faster "
                f"than {_series_label(topology, gpu, 'system', system_first)}",
                run_facts(topology, gpu, [system_first], definition=DEF_FIG4, link=NA)))
    return out
