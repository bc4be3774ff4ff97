"""The paper's Fig. 7 and Table II: read and write bandwidth of every processor x memory
with its % of the path's theoretical peak, alone and while the partner processor reads
(the contention half), and what each allocator is (its API, where its pages were after
first touch and access, which processors reached them).

Memories are named by their role seen from the processor (model.roles), with the NUMA
node or GPU beside it. A case is drawn under the memory its pages were on after the run
(``placement``), never the one it asked for: a managed buffer a GPU pulled into its HBM is
an HBM case (``relocated``). The peers of one role (the three other superchips of a quad
GH200) share one bar: their median, the whisker spanning them; the CSV beside each figure
holds every processor x memory.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import outfiles
from ..model.peaks import ASSUMED_MARK, ASSUMED_NOTE, PeakModel
from ..model.roles import labelled, role, role_rank
from ..model.vocabulary import MEMORY_WORDS, kind_name, processor_word
from ..render import style
from ..render.tables import markdown
from ..results.cases import best, drawn_under, natural_key, same_memory
from . import published, translation
from ..render.items import Comparison, Context, Drawn, Grid, faceted, item

OPS = ("read", "write")
BW_COMMAND = "mempath bw --all"
NOISE_COMMAND = "mempath bw --all --op read,write --threads all --noise partner"


# ---------------------------------------------------------------- shared by copies.py

def single_memory(placement: Any) -> str | None:
    """The one memory a placement names (``numa4``), None for unknown, empty or mixed pages."""
    text = "" if placement is None or (isinstance(placement, float) and math.isnan(placement)) \
        else str(placement).strip()
    if not text or text in ("unknown", "host") or any(c in text for c in ",:;"):
        return None
    return text


def relocated(cases: pd.DataFrame, topologies: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """The cases that ran, each under the memories its pages were on (``mem``, ``dst_mem``;
    the asked ones kept in ``asked_mem``, ``asked_dst_mem``); ``placed`` True for every row
    kept. Cases whose pages cannot be placed on one memory are left out, each group of
    them named in the notes."""
    if cases.empty:
        return cases.assign(asked_mem=pd.Series(dtype=object), asked_dst_mem=pd.Series(dtype=object)), []
    ran = cases[(cases["status"] == "ok") & np.isfinite(pd.to_numeric(cases["median_GBps"], errors="coerce"))]
    rows, notes = [], {}
    for row in ran.to_dict("records"):
        topo = topologies.get(row["host"], {})
        mem, why = drawn_under(topo, str(row.get("mem") or ""), str(row.get("alloc") or ""), row.get("placement"))
        dst, why_dst = "", ""
        if row.get("dst_mem"):
            dst, why_dst = drawn_under(topo, str(row["dst_mem"]), str(row.get("dst_alloc") or row.get("alloc") or ""),
                                       row.get("dst_placement"))
        if why or why_dst:
            reason = why or why_dst
            notes[reason] = notes.get(reason, 0) + 1
            continue
        rows.append({**row, "asked_mem": row.get("mem"), "asked_dst_mem": row.get("dst_mem") or "",
                     "mem": mem, "dst_mem": dst, "placed": True})
    frame = pd.DataFrame(rows, columns=[*ran.columns, *(c for c in ("asked_mem", "asked_dst_mem", "placed")
                                                        if c not in ran.columns)])
    if "placed" in frame:
        frame["placed"] = frame["placed"].astype(bool)
    lines = [f"Not drawn: {reason} ({count} case{'s' if count > 1 else ''})." for reason, count in notes.items()]
    return frame, lines


def paper_processors(topology: Mapping[str, Any]) -> list[str]:
    """The processors the paper draws, in topology order: each CPU socket and each GPU
    (``cpus``, every socket at once, has no locality and is left out)."""
    return [p["name"] for p in topology.get("processors", [])
            if p.get("kind") == "gpu" or (p.get("kind") == "cpu" and p.get("numa") is not None)]


def pu_title(topology: Mapping[str, Any], pu: str) -> str:
    """``gpu0 (Hopper)``, ``cpu0 (Grace)``; an x86 GPU by its model (model/vocabulary.py)."""
    return f"{pu} ({processor_word(topology, pu)})"


def compact(names: Sequence[str]) -> str:
    """``numa1,2,3`` for numa1, numa2, numa3; ``numa0,4 gpu0`` where prefixes differ;
    names without a number as they are."""
    groups: dict[str, list[str]] = {}
    for name in sorted(dict.fromkeys(names), key=natural_key):
        match = re.fullmatch(r"([a-z]+)(\d+)", name)
        prefix, number = (match.group(1), match.group(2)) if match else (name, "")
        groups.setdefault(prefix, []).append(number)
    return " ".join(prefix + ",".join(n for n in numbers) for prefix, numbers in groups.items())


def role_names(role_name: str, names: Sequence[str]) -> str:
    """A role and its memories on two lines: ``peer LPDDR`` / ``(numa1,2,3)``."""
    return f"{role_name}\n({compact(names)})" if role_name else compact(names)


def with_roles(frame: pd.DataFrame, topologies: Mapping[str, Mapping[str, Any]],
               pu: str = "pu", mem: str = "mem", out: str = "role") -> pd.DataFrame:
    """``out``: the role of ``mem`` seen from ``pu`` (the memory's name where none)."""
    roles = [role(topologies.get(h, {}), p, m) or m for h, p, m in zip(frame["host"], frame[pu], frame[mem])]
    return frame.assign(**{out: roles})


def grace_hosts(ctx: Context) -> list[str]:
    return [h for h in ctx.topologies if getattr(ctx.models.get(h), "grace", False)]


COMPARED = ("Published values: each where the node has a path of the same processor, memory role and operation "
            "(Grace Hopper sources on Grace Hopper nodes, x86 ones on x86 nodes); 'not measured' where it has the "
            "path but the run measured none. A comparison (with a ratio) only where the hardware class, link, "
            "definition and direction match the source's; any other is context (paper.md's table apart, no "
            "ratio). This run's value is the median over the node's processors of that kind.")


def compare(item_key: str, pub: published.Published, run: float, where: str, facts: published.Facts
            ) -> Comparison:
    """``pub`` held against this run's value (NaN: not measured), ``where`` saying which
    processors and node the run's value comes from, ``facts`` what this run's value is: a
    comparison where they match the published value's, else context (published.hold)."""
    return published.hold(item_key, pub, run, f"{pub.quantity} [{where}]", facts)


def path_facts(topology: Mapping[str, Any], kind: str, role_name: str, link: str, rows: pd.DataFrame,
               definition: str, ops: Sequence[str]) -> published.Facts:
    """This run's facts for a value over the ``kind`` processors' paths to ``role_name``
    memory (crossing ``link``): those of the first processor and memory ``rows`` measured,
    else of the first such path of the node; the direction the operations the rows hold."""
    if not rows.empty:
        pu, mem = str(rows["pu"].iloc[0]), str(rows["mem"].iloc[0])
        ops = sorted(set(rows["op"].astype(str))) if "op" in rows else ops
    else:
        procs = {p["name"]: p for p in topology.get("processors", [])}
        pu, mem = next(((p["pu"], p["mem"]) for p in topology.get("paths", [])
                        if procs.get(p["pu"], {}).get("kind") == kind and p["pu"] in paper_processors(topology)
                        and role(topology, p["pu"], p["mem"]) == role_name and crosses(p.get("via"), link)),
                       ("", ""))
    return published.run_facts(topology, pu, [mem] if mem else [], definition=definition,
                               direction=" or ".join(sorted(ops)))


# ---------------------------------------------------------------- Fig. 7, alone

def _peaks(frame: pd.DataFrame, models: Mapping[str, PeakModel]) -> pd.DataFrame:
    peaks = [models[h].path(p, m) if h in models else None
             for h, p, m in zip(frame["host"], frame["pu"], frame["mem"])]
    gbps = [pk.gbps if pk is not None and pk.gbps else math.nan for pk in peaks]
    return frame.assign(peak_GBps=gbps, assumed=[bool(pk and pk.assumed) for pk in peaks],
                        pct=100.0 * frame["median_GBps"].astype(float) / pd.Series(gbps, index=frame.index))


def path_bandwidth(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """Per host, processor, memory (where the pages were) and op: the full-width case of
    the highest median among the allocators, its peak and % of it."""
    cases = ctx.table("bw/cases")
    if cases.empty or "op" not in cases:
        return pd.DataFrame(), []
    rw = cases[cases["op"].isin(OPS)]
    moved, notes = relocated(rw, ctx.topologies)
    keep = [(h, p) for h, t in ctx.topologies.items() for p in paper_processors(t)]
    moved = moved[[(h, p) in set(keep) for h, p in zip(moved["host"], moved["pu"])]] if not moved.empty else moved
    top = best(moved, ["host", "pu", "mem", "op"])
    if top.empty:
        return top, notes
    top = with_roles(_peaks(top, ctx.models), ctx.topologies)
    top["label"] = [labelled(ctx.topologies[h], p, m) for h, p, m in zip(top["host"], top["pu"], top["mem"])]
    return top, notes


def _pct_text(pct: float, assumed: bool) -> str:
    return "" if not math.isfinite(pct) else f"{pct:.0f}%" + (ASSUMED_MARK if assumed else "")


def _groups(part: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """(role, memories) of one processor's rows, roles in ROLE_ORDER."""
    roles = sorted(set(part["role"]), key=lambda r: (role_rank(r), r))
    return [(r, sorted(set(part.loc[part["role"] == r, "mem"]), key=natural_key)) for r in roles]


def _panels_for(frame: pd.DataFrame, ctx: Context, extra: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """(host, pu, *extra) panels in topology order, hosts in run order."""
    out = []
    for host, topo in ctx.topologies.items():
        order = paper_processors(topo)
        mine = frame[frame["host"] == host]
        keys = list(dict.fromkeys(zip(*(mine[c] for c in ("pu", *extra))))) if not mine.empty else []
        keys.sort(key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k))
        out += [(host, *k) for k in keys]
    return out


TEXT_IN_PER_CHAR = 0.058  # 7 pt text along its line


def _headroom(ends: Sequence[tuple[float, str]], plot_in: float) -> float:
    """The y limit at which each (top, text) fits its rotated text above it in a plot
    ``plot_in`` inches tall."""
    top = 0.0
    for end, text in ends:
        share = 1.0 - (len(text) * TEXT_IN_PER_CHAR + 0.06) / plot_in
        top = max(top, end / max(share, 0.2), end * 1.08)
    return top


def fit_texts(fig: Any, panels: Sequence[tuple[Any, Sequence[tuple[float, str]]]]) -> None:
    """Raise each panel's y limit until its bars' rotated texts fit (after the layout has
    set the plots' heights)."""
    fig.draw_without_rendering()
    for ax, ends in panels:
        if ax.figure is not fig:  # a panel of the figure's other page
            continue
        top = _headroom(ends, ax.get_window_extent().height / fig.dpi)
        ax.set_ylim(0, top if top > 0 else 1)


def _bar_panel(ax: Any, part: pd.DataFrame, value: Callable[[pd.DataFrame], tuple[float, float, float]],
               texts: Callable[[pd.DataFrame], str], peak: bool = True,
               stack: Callable[[pd.DataFrame], float] | None = None,
               marker: Callable[[pd.DataFrame], float] | None = None) -> list[tuple[float, str]]:
    """Grouped bars of one processor: a group per memory role, a bar per op; the text of
    each bar above it (rotated), the path's peak as a dotted line, the peers' spread as a
    whisker; ``stack`` adds a segment on top (the noise reader), ``marker`` a diamond (the
    bandwidth alone)."""
    groups = _groups(part)
    width = 0.8 / len(OPS)
    ends: list[tuple[float, str]] = []
    for x, (role_name, mems) in enumerate(groups):
        rows = part[part["role"] == role_name]
        peaks = rows["peak_GBps"].astype(float) if peak else pd.Series(dtype=float)
        level = float(np.nanmedian(peaks)) if np.isfinite(peaks).any() else math.nan
        if math.isfinite(level):
            ax.hlines(level, x - 0.45, x + 0.45, colors="black", linestyles=(0, (1, 1)), linewidth=0.8,
                      label="theoretical peak of the path (Fig. 3)")
            ends.append((level, ""))
        for k, op in enumerate(OPS):
            mine = rows[rows["op"] == op]
            if mine.empty:
                continue
            pos = x + (k - (len(OPS) - 1) / 2) * width
            mid, lo, hi = value(mine)
            look = style.series(k)
            ax.bar(pos, mid, width * 0.92, color=look["color"], hatch="////" if k else None,
                   edgecolor="white", linewidth=0.4, label=op)
            end = mid
            if stack is not None:
                extra = stack(mine)
                if math.isfinite(extra):
                    ax.bar(pos, extra, width * 0.92, bottom=mid, color="0.75", hatch="....",
                           edgecolor="0.45", linewidth=0.4, label="noise reader's own GB/s (stacked)")
                    end = mid + extra
            if len(mems) > 1 and math.isfinite(lo) and hi > lo:
                ax.errorbar(pos, mid, yerr=[[mid - lo], [hi - mid]], fmt="none", ecolor="black",
                            elinewidth=0.6, capsize=1.5, label="spread over the peers (min-max)")
                end = max(end, hi)
            if marker is not None:
                alone = marker(mine)
                if math.isfinite(alone):
                    ax.plot([pos], [alone], linestyle="none", marker="D", markersize=2.5, color="black",
                            label="the same case alone (no noise)")
                    end = max(end, alone)
            text = " " + texts(mine)
            at = max(end, level) if math.isfinite(level) else end
            if text.strip():  # above the bar, and above the peak's line where that is higher
                ax.text(pos, at, text, rotation=90, ha="center", va="bottom", fontsize=7)
            ends.append((at, text))
    ax.set_xticks(range(len(groups)), [role_names(r, m) for r, m in groups], rotation=90, fontsize=7)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, max((e for e, _ in ends), default=1.0) * 1.5 or 1.0)  # fit_texts sets the final one
    ax.grid(True, axis="y")
    ax.set_axisbelow(True)
    return ends


def _stats(column: str) -> Callable[[pd.DataFrame], tuple[float, float, float]]:
    def stats(rows: pd.DataFrame) -> tuple[float, float, float]:
        values = rows[column].astype(float)
        return float(values.median()), float(values.min()), float(values.max())
    return stats


def _median_pct(rows: pd.DataFrame) -> str:
    pct = rows["pct"].astype(float)
    return _pct_text(float(pct.median()), bool(rows["assumed"].any())) if np.isfinite(pct).any() else ""


# Published Fig. 7 values and this run's same quantity: (processor kind, ops, memory role,
# a link the path must cross ("" any), statistic over the processors' % of peak: "median"
# of each processor's, or "max").
FIG7_ALONE: dict[str, tuple[str, tuple[str, ...], str, str, str]] = {
    "fig7.hopper.read.local_lpddr.pct": ("gpu", ("read",), "local LPDDR", "", "median"),
    "fig7.hopper.write.local_lpddr.pct": ("gpu", ("write",), "local LPDDR", "", "median"),
    "fig7.grace.read.local_hbm.pct": ("cpu", ("read",), "local HBM", "", "median"),
    "fig7.grace.write.local_hbm.pct": ("cpu", ("write",), "local HBM", "", "median"),
    "fig7.hopper.any.peer_lpddr.max_pct": ("gpu", OPS, "peer LPDDR", "nvlink", "max"),
}


def crosses(via: Any, link: str) -> bool:
    return not link or link in str(via or "").split("+")


def has_path(topology: Mapping[str, Any], kind: str, role_name: str, link: str = "") -> bool:
    """Whether the node has a path of a ``kind`` processor to a memory of that role that
    crosses ``link``: a published value of another kind of path is no comparison."""
    procs = {p["name"]: p for p in topology.get("processors", [])}
    return any(procs.get(p["pu"], {}).get("kind") == kind and p["pu"] in paper_processors(topology)
               and role(topology, p["pu"], p["mem"]) == role_name and crosses(p.get("via"), link)
               for p in topology.get("paths", []))
# x86 published values: (processor kind, op, role, column): median over the processors.
X86_ALONE: dict[str, tuple[str, str, str, str]] = {
    "cpu_gpu_article.x86.cpu.read.local_ddr": ("cpu", "read", "local DDR", "median_GBps"),
}


def _over_processors(rows: pd.DataFrame, column: str, stat: str) -> tuple[float, str]:
    """The statistic over processors of each processor's median ``column``, and which
    processors it spans."""
    if rows.empty:
        return math.nan, "not measured"
    per = rows.groupby("pu")[column].max() if stat == "max" else rows.groupby("pu")[column].median()
    names = sorted(per.index, key=natural_key)
    value = float(per.max()) if stat == "max" else float(per.median())
    return value, f"{stat} over {compact(names)}"


def fig7_comparisons(frame: pd.DataFrame, ctx: Context) -> list[Comparison]:
    """Fig. 7's published values against this run (Grace nodes), the x86 ones against x86
    nodes; a node of the other kind has no such path and gets no row."""
    out = []
    for host in ctx.topologies:
        mine = frame[frame["host"] == host] if not frame.empty else frame
        grace = getattr(ctx.models.get(host), "grace", False)
        specs = FIG7_ALONE if grace else {}
        for pub in published.VALUES:
            if pub.key in specs:
                kind, ops, role_name, link, stat = specs[pub.key]
                if not has_path(ctx.topologies[host], kind, role_name, link):
                    continue
                rows = mine[(mine["pu_kind"] == kind) & mine["op"].isin(ops) & (mine["role"] == role_name)
                            & np.array([crosses(v, link) for v in mine["via"]], dtype=bool)] if not mine.empty else mine
                value, over = _over_processors(rows, "pct", stat)
                facts = path_facts(ctx.topologies[host], kind, role_name, link, rows, published.DEF_BW_PCT, ops)
                out.append(compare("read_write_bandwidth", pub, value, f"{host}: {over}", facts))
            elif not grace and pub.key in X86_ALONE:
                kind, op, role_name, column = X86_ALONE[pub.key]
                if not has_path(ctx.topologies[host], kind, role_name):
                    continue
                rows = mine[(mine["pu_kind"] == kind) & (mine["op"] == op) & (mine["role"] == role_name)] \
                    if not mine.empty else mine
                value, over = _over_processors(rows, column, "median")
                facts = path_facts(ctx.topologies[host], kind, role_name, "", rows, published.DEF_SOCKET_READ_RUN,
                                   (op,))
                out.append(compare("read_write_bandwidth", pub, value, f"{host}: {over}", facts))
    return out


FIG7_CSV = ("host", "pu", "op", "mem", "role", "label", "asked_mem", "alloc", "kernel", "threads",
            "median_GBps", "min_GBps", "max_GBps", "peak_GBps", "assumed", "pct", "placement", "run")


@item("read_write_bandwidth", "Fig. 7", "Read and write bandwidth of every processor and memory, % of peak",
      "figure", ("bw/cases",), BW_COMMAND, order=7)
def read_write_bandwidth(ctx: Context) -> Drawn:
    return _bw_figure(ctx, "read_write_bandwidth", path_bandwidth, _bandwidth_grid, FIG7_CSV,
                      "no read or write case of /bw/cases ran alone (no noise), out of cache, on one memory of a "
                      f"socket or GPU; measured by `{BW_COMMAND}`")


def _bw_figure(ctx: Context, key: str, source: Callable[[Context], tuple[pd.DataFrame, list[str]]],
               grid: Callable[[Context, pd.DataFrame, list[str]], Grid], columns: Sequence[str],
               why_empty: str) -> Drawn:
    """A figure of ``source``'s bw cases (with its notes), drawn by ``grid``, its rows'
    ``columns`` as the source data."""
    frame, found = source(ctx)
    return faceted(ctx, key, frame, why_empty, lambda frame: grid(ctx, frame, found), found, csv=(frame, columns))


def _bandwidth_grid(ctx: Context, frame: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 7's panels and caption (``found``: path_bandwidth's notes)."""
    several = len(ctx.topologies) > 1
    fitted = []

    def draw(ax: Any, panel: tuple[str, str]) -> None:
        part = frame[(frame["host"] == panel[0]) & (frame["pu"] == panel[1])]
        fitted.append((ax, _bar_panel(ax, part, _stats("median_GBps"), _median_pct)))
        _first_column_label(ax)

    notes = [
        "Bars: the median GB/s (decimal) of the case with the highest median among the allocators, with all "
        "cores of a socket or a GPU's full grid, read and write; above each, its % of the path's theoretical "
        "peak (Fig. 3: the slowest link or memory on the way, one direction), which the dotted line marks.",
        "Memories by their role seen from the processor; the peers of one role share a bar (their median; "
        "the whisker spans them). Every processor x memory is in read_write_bandwidth.csv.",
        "A case is drawn under the memory its pages were on after the run (placement), not the one it asked "
        f"for ({int((frame['asked_mem'] != frame['mem']).sum())} of the processor x memory x op values drawn "
        "moved so).",
        *found]
    if frame["assumed"].any():
        notes.append(ASSUMED_NOTE)
    comparisons = fig7_comparisons(frame, ctx)
    if comparisons:
        notes.append(COMPARED)
    skipped = sorted({p for h, t in ctx.topologies.items() for p in (q["name"] for q in t.get("processors", []))
                      if p not in paper_processors(t)})
    if skipped:
        notes.append(f"Left out: {', '.join(skipped)} (every socket at once: no memory is local to it).")
    return Grid(_panels_for(frame, ctx), draw, lambda panel: (f"{panel[0]}\n" if several else "")
                + pu_title(ctx.topologies[panel[0]], panel[1]), style.PAGE_IN, 2.7, max_cols=2,
                finish=lambda fig, _axes: fit_texts(fig, fitted), caption=lambda: notes, comparisons=comparisons,
                processor=lambda panel: (panel[0], panel[1]))


def _first_column_label(ax: Any) -> None:
    """The y axis named on the panels of the first column."""
    if ax.get_subplotspec().colspan.start == 0:
        ax.set_ylabel("GB/s (median of repetitions)")


# ---------------------------------------------------------------- Fig. 7, contention

def noise_gbps(cases: pd.DataFrame) -> pd.Series:
    """The noise reader's own GB/s in the case's window: ``noise_GBps`` (C++ writer), its
    lower-case spelling, or noise_bytes / noise_seconds; NaN where not recorded."""
    for name in ("noise_GBps", "noise_gbps"):
        if name in cases:
            return pd.to_numeric(cases[name], errors="coerce")
    if "noise_bytes" in cases and "noise_seconds" in cases:
        seconds = pd.to_numeric(cases["noise_seconds"], errors="coerce")
        return pd.to_numeric(cases["noise_bytes"], errors="coerce") / seconds.where(seconds > 0) / 1e9
    return pd.Series(math.nan, index=cases.index)


def contention(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """Read and write cases that ran with a noise reader (``noise`` = PU:MEM), per host,
    processor, memory, op and reader: the best allocator's median, the reader's own GB/s,
    their sum and its % of the memory's peak where both used one memory."""
    cases = ctx.table("bw/cases")
    if cases.empty or "noise" not in cases:
        return pd.DataFrame(), []
    noisy = cases[cases["op"].isin(OPS) & (cases["noise"].fillna("").str.contains(":"))]
    noisy = noisy.assign(noise_GBps=noise_gbps(noisy))
    moved, notes = relocated(noisy, ctx.topologies)
    if moved.empty:
        return moved, notes
    keep = {(h, p) for h, t in ctx.topologies.items() for p in paper_processors(t)}
    moved = moved[[(h, p) in keep for h, p in zip(moved["host"], moved["pu"])]]
    moved = moved[moved["cache_resident"].fillna(0).astype(int) != 1]
    if moved.empty:
        return moved, notes
    top = moved.loc[moved.groupby(["host", "pu", "mem", "op", "noise"])["median_GBps"].idxmax().values]
    top = with_roles(_peaks(top.reset_index(drop=True), ctx.models), ctx.topologies)
    split = top["noise"].str.split(":", n=1, expand=True)
    top = top.assign(noise_pu=split[0], noise_mem=split[1])
    top = with_roles(top, ctx.topologies, "noise_pu", "noise_mem", "noise_role")
    same = [same_memory(ctx.topologies.get(h, {}), m, n)
            for h, m, n in zip(top["host"], top["mem"], top["noise_mem"])]
    mem_peak = [ctx.models[h].memory(m).gbps if h in ctx.models else None for h, m in zip(top["host"], top["mem"])]
    total = top["median_GBps"].astype(float) + top["noise_GBps"].astype(float)
    top = top.assign(same_memory=same, sum_GBps=total,
                     memory_peak_GBps=[p or math.nan for p in mem_peak],
                     sum_pct=[100.0 * t / p if s and p else math.nan for t, p, s in zip(total, mem_peak, same)])
    alone, _ = path_bandwidth(ctx)
    if not alone.empty:
        key = alone.set_index(["host", "pu", "mem", "op"])["median_GBps"]
        top["alone_GBps"] = [key.get((h, p, m, o), math.nan) for h, p, m, o in
                             zip(top["host"], top["pu"], top["mem"], top["op"])]
    else:
        top["alone_GBps"] = math.nan
    top["label"] = [labelled(ctx.topologies[h], p, m) for h, p, m in zip(top["host"], top["pu"], top["mem"])]
    return top, notes


# Published contention values: (measured kind, op, role, reader kind, reader's memory role, statistic).
FIG7_NOISE: dict[str, tuple[str, str, str, str, str, str]] = {
    "fig7.contention.grace.write.local_hbm.pct": ("cpu", "write", "local HBM", "gpu", "local LPDDR", "pct"),
    "fig7.contention.hopper.write.local_hbm.pct": ("gpu", "write", "local HBM", "cpu", "local HBM", "pct"),
    "fig7.contention.sum.write.local_hbm.gbps": ("gpu", "write", "local HBM", "cpu", "local HBM", "sum_GBps"),
    "fig7.contention.sum.write.local_hbm.pct": ("gpu", "write", "local HBM", "cpu", "local HBM", "sum_pct"),
}


def contention_comparisons(frame: pd.DataFrame, ctx: Context) -> list[Comparison]:
    out = []
    for host in grace_hosts(ctx):
        mine = frame[frame["host"] == host] if not frame.empty else frame
        for pub in published.VALUES:
            if pub.key not in FIG7_NOISE:
                continue
            kind, op, role_name, reader, reader_role, column = FIG7_NOISE[pub.key]
            if not has_path(ctx.topologies[host], kind, role_name):
                continue
            rows = mine
            if not mine.empty:
                rows = mine[(mine["pu_kind"] == kind) & (mine["op"] == op) & (mine["role"] == role_name)
                            & (mine["noise_role"] == reader_role)
                            & mine["noise_pu"].str.startswith(reader)]
                rows = rows[np.isfinite(rows[column].astype(float))]
            value, over = _over_processors(rows, column, "median")
            definition = published.DEF_CONTENTION_SUM_RUN if column.startswith("sum") else published.DEF_CONTENTION_PCT
            facts = path_facts(ctx.topologies[host], kind, role_name, "", rows, definition, (op,))
            out.append(compare("read_write_under_contention", pub, value, f"{host}: {over}", facts))
    return out


CONTENTION_CSV = ("host", "pu", "op", "mem", "role", "label", "asked_mem", "alloc", "noise", "noise_role",
                  "median_GBps", "pct", "peak_GBps", "assumed", "noise_GBps", "sum_GBps", "same_memory",
                  "memory_peak_GBps", "sum_pct", "alone_GBps", "run")


def _contention_text(rows: pd.DataFrame) -> str:
    text = _median_pct(rows)
    sums = rows["sum_pct"].astype(float)
    if np.isfinite(sums).any():
        text += f" Σ{float(sums.median()):.0f}%"
    return text


@item("read_write_under_contention", "Fig. 7", "Read and write bandwidth while the partner processor reads",
      "figure", ("bw/cases",), NOISE_COMMAND, order=7.5)
def read_write_under_contention(ctx: Context) -> Drawn:
    why = "no read or write case of /bw/cases ran with a noise reader (the `noise` column is empty in every run); " \
        f"measured by `{NOISE_COMMAND}`"
    return _bw_figure(ctx, "read_write_under_contention", contention, _contention_grid, CONTENTION_CSV, why)


def _contention_grid(ctx: Context, frame: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 7's contention panels and caption (``found``: contention's notes)."""
    several = len(ctx.topologies) > 1
    recorded = np.isfinite(frame["noise_GBps"].astype(float))
    fitted = []

    def draw(ax: Any, panel: tuple[str, str, str]) -> None:
        host, pu, noise = panel
        part = frame[(frame["host"] == host) & (frame["pu"] == pu) & (frame["noise"] == noise)]
        fitted.append((ax, _bar_panel(ax, part, _stats("median_GBps"), _contention_text,
                                      stack=lambda rows: float(rows["noise_GBps"].astype(float).median()),
                                      marker=lambda rows: float(rows["alone_GBps"].astype(float).median()))))
        _first_column_label(ax)

    def title(panel: tuple[str, str, str]) -> str:
        host, pu, noise = panel
        reader, mem = noise.split(":", 1)
        return ((f"{host}\n" if several else "") + f"{pu_title(ctx.topologies[host], pu)}\n"
                f"+ {reader} reads {role(ctx.topologies[host], reader, mem) or mem}")

    notes = [
        "Each panel: one processor's read and write cases while another processor (the noise reader, named "
        "above the panel with the role of the memory it reads, seen from itself) reads a buffer continuously "
        "(`--noise partner`: Grace reads its superchip's HBM while Hopper is measured, Hopper its LPDDR while "
        "Grace is; the paper's sec. III-C).",
        "Coloured bar: the measured case's median GB/s, its % of the path's peak above it; grey segment on "
        "top: the reader's own GB/s within the case's window, so the bar's top is the two processors' sum; "
        "Σ: that sum as % of the memory's peak, where both used one memory (the paper's 2682.8 GB/s, 67%); "
        "diamond: the same case alone.",
        *found]
    missing = sorted(set(frame.loc[~recorded, "run"]))
    if missing:
        notes.append(f"The noise reader's own bandwidth was not recorded in {', '.join(missing)} (a bw file "
                     "before the noise_GBps column): those bars show the measured case only, without a sum.")
    if frame["assumed"].any():
        notes.append(ASSUMED_NOTE)
    comparisons = contention_comparisons(frame, ctx)
    if comparisons:
        notes.append(COMPARED + " The sum held against the paper's 2682.8 GB/s is Hopper's write of its HBM "
                     "plus Grace's reading of that HBM in the same window; the paper's own 17% (Grace writing "
                     "HBM) and 65% (Hopper) of 450 and 4000 GB/s add up to 2676.5, its sum within rounding, so "
                     "the text may sum the two processors' writes instead.")
    return Grid(_panels_for(frame, ctx, ("noise",)), draw, title, style.PAGE_IN, 3.0, max_cols=2,
                finish=lambda fig, _axes: fit_texts(fig, fitted), title_size=7, caption=lambda: notes,
                comparisons=comparisons, processor=lambda panel: (panel[0], panel[1]))


# ---------------------------------------------------------------- Table II

ALLOCATORS = ("system", "numa", "pinned", "registered", "managed", "device")
# What each allocator is (docs/design.md's allocator table, src/core/allocators.cpp) and what
# the paper's Table II prints for it: placement and automatic migration (documented).
API = {
    "system": "mmap (malloc), first touch by a thread of the asked node",
    "numa": "numa_alloc_onnode(node)",
    "pinned": "cudaMallocHost, from a thread bound to the node",
    "registered": "numa_alloc_onnode + cudaHostRegister",
    "managed": "cudaMallocManaged, first touch (no prefetch)",
    "device": "cudaMalloc",
}
PAPER_TABLE_II = {
    "system": ("first touch", "yes (CUDA 12.4)"),
    "numa": ("specified", "no"),
    "pinned": ("DDR", "no"),
    "registered": ("not in Table II", ""),
    "managed": ("first touch", "yes"),
    "device": ("HBM", "no"),
}
ALLOC_COMMAND = "mempath bw --all; mempath allocmatrix --mem all; mempath um"


def run_gpu(ctx: Context, run: str, cases: pd.DataFrame) -> str:
    """The GPU of a run's allocmatrix: the device buffers' gpuN, else --gpu N of its
    command line, else gpu0 (the default)."""
    mine = cases[cases["run"] == run]
    device = sorted({str(m) for m in [*mine["src_mem"], *mine["dst_mem"]] if str(m).startswith("gpu")},
                    key=natural_key)
    if device:
        return device[0]
    line = next((str(r.attrs.get("command_line", "")) for r in ctx.runs.runs if r.name == run), "")
    found = re.search(r"--gpu[= ](\d+)", line)
    return f"gpu{found.group(1) if found else 0}"


def placement_evidence(ctx: Context) -> pd.DataFrame:
    """One row per buffer whose pages were located after a case: host, allocator, the
    memory asked, the placement, the processor that touched it (``pu``: the case's, the
    GPU of a cudaMemcpy or of a um case), what it did (``bw read``, ``cudaMemcpy source``,
    ``um inplace``) and the run."""
    rows: list[dict[str, Any]] = []
    bw = ctx.table("bw/cases")
    if not bw.empty and "placement" in bw:
        for r in bw[bw["status"] == "ok"].to_dict("records"):
            touch = f"bw {r['op']}" + (" under noise" if ":" in str(r.get("noise") or "") else "")
            rows.append({"host": r["host"], "alloc": r["alloc"], "mem": r["mem"], "placement": r.get("placement"),
                         "pu": r["pu"], "by": touch, "run": r["run"]})
            if str(r.get("dst_mem") or ""):
                rows.append({"host": r["host"], "alloc": r.get("dst_alloc") or r["alloc"], "mem": r["dst_mem"],
                             "placement": r.get("dst_placement"), "pu": r["pu"], "by": touch, "run": r["run"]})
    am = ctx.table("allocmatrix/cases")
    if not am.empty and "placement" in am:
        gpus = {run: run_gpu(ctx, run, am) for run in set(am["run"])}
        for r in am[am["status"] == "ok"].to_dict("records"):
            for side, alloc, mem, at in (("source", r["src_alloc"], r["src_mem"], r.get("placement")),
                                         ("destination", r["dst_alloc"], r["dst_mem"], r.get("dst_placement"))):
                rows.append({"host": r["host"], "alloc": alloc, "mem": mem, "placement": at, "pu": gpus[r["run"]],
                             "by": f"cudaMemcpy {side}", "run": r["run"]})
    um = ctx.table("um/cases")
    if not um.empty and "alloc" in um:
        samples = ctx.table("um/samples")
        for r in um[um["status"] == "ok"].to_dict("records"):
            where = r.get("placement")
            if not single_memory(where) and not samples.empty and "placement" in samples:
                mine = samples[(samples["run"] == r["run"]) & (samples["case_id"] == r["case_id"])]
                found = [p for p in mine["placement"].fillna("") if str(p).strip()]
                where = found[-1] if found else where
            if str(where or "").strip():
                gpu = str(r.get("gpu", ""))
                gpu = gpu if gpu.startswith("gpu") else f"gpu{gpu}"
                # um names the host node of every case; a cudaMalloc buffer is the GPU's memory
                asked = gpu if r["alloc"] == "device" else r["mem"]
                rows.append({"host": r["host"], "alloc": r["alloc"], "mem": asked, "placement": where,
                             "pu": gpu, "by": f"um {r['experiment']}", "run": r["run"]})
    return pd.DataFrame(rows, columns=["host", "alloc", "mem", "placement", "pu", "by", "run"])


def _placement_text(ev: pd.DataFrame, topology: Mapping[str, Any]) -> str:
    """``as asked in 40 of 42; local LPDDR -> local HBM after a GPU's bw read (2)``: the
    memories by their role seen from the processor that touched them."""
    if ev.empty:
        return "not measured"
    kinds = {p["name"]: p.get("kind") for p in topology.get("processors", [])}
    stayed, moved, unknown = 0, {}, {}
    for r in ev.itertuples():
        where = single_memory(r.placement)
        who = "a GPU's" if kinds.get(r.pu) == "gpu" else "a CPU's"
        asked = role(topology, r.pu, r.mem) or kind_name(topology, r.mem)
        if where is not None and same_memory(topology, where, r.mem):
            stayed += 1
        elif where is not None:
            key = f"{asked} -> {role(topology, r.pu, where) or kind_name(topology, where)} after {who} {r.by}"
            moved[key] = moved.get(key, 0) + 1
        else:
            text = str(r.placement or "").strip() or "unknown"
            key = f"{asked}: {'unknown' if text in ('unknown', 'host') else 'split'} after {who} {r.by}"
            unknown[key] = unknown.get(key, 0) + 1
    parts = [f"as asked in {stayed} of {len(ev)}"]
    parts += [f"{k} ({n})" for k, n in sorted(moved.items(), key=lambda kv: -kv[1])[:4]]
    parts += [f"{k} ({n})" for k, n in sorted(unknown.items(), key=lambda kv: -kv[1])[:3]]
    if len(moved) > 4 or len(unknown) > 3:
        parts.append("more in allocation_apis_placements.csv")
    return "; ".join(parts)


def _access_text(bw: pd.DataFrame, topology: Mapping[str, Any], kind: str, alloc: str) -> str:
    """``yes: LPDDR, HBM (bw, 24 cases)``, ``no: REASON``, or what the node reports."""
    mine = bw[(bw["pu_kind"] == kind) & (bw["alloc"] == alloc)] if not bw.empty else bw
    ok = mine[mine["status"] == "ok"] if not mine.empty else mine
    if not ok.empty:
        names = {kind_name(topology, m) for m in ok["mem"]}
        kinds = [k for k in MEMORY_WORDS if any(n.startswith(k) for n in names)]
        return f"yes: {', '.join(kinds)} (bw, {len(ok)} cases ran)"
    if not mine.empty:
        reasons = [r for r in mine["reason"].fillna("") if r]
        return f"no: {reasons[0] if reasons else 'every case ' + '/'.join(sorted(set(mine['status'])))} (bw)"
    reported = [p for p in topology.get("paths", [])
                if next((q.get("kind") for q in topology.get("processors", []) if q.get("name") == p.get("pu")),
                        None) == kind]
    if not reported:
        return "no such processor"
    reach = any(alloc in p.get("allocs", []) for p in reported)
    return f"not measured (node reports: {'yes' if reach else 'no'})"


@item("allocation_apis", "Table II", "Allocators: API, where the pages were, which processors reached them",
      "table", ("bw/cases", "allocmatrix/cases", "um/cases"), ALLOC_COMMAND, order=4.5)
def allocation_apis(ctx: Context) -> Drawn:
    evidence = placement_evidence(ctx)
    bw = ctx.table("bw/cases")
    rows = []
    for host, topology in ctx.topologies.items():
        ev_host = evidence[evidence["host"] == host]
        bw_host = bw[bw["host"] == host] if not bw.empty and "host" in bw else pd.DataFrame()
        seen = set(ev_host["alloc"]) | (set(bw_host["alloc"]) if not bw_host.empty else set())
        for alloc in [a for a in ALLOCATORS if a in seen] + sorted(seen - set(ALLOCATORS)):
            placement, migration = PAPER_TABLE_II.get(alloc, ("", ""))
            rows.append({"host": host, "allocator": alloc, "API": API.get(alloc, ""),
                         "placement (paper)": placement, "migration (paper)": migration,
                         "pages after first touch and access (measured)":
                             _placement_text(ev_host[ev_host["alloc"] == alloc], topology),
                         "CPU access (measured)": _access_text(bw_host, topology, "cpu", alloc),
                         "GPU access (measured)": _access_text(bw_host, topology, "gpu", alloc),
                         **translation.columns(ctx, host, topology, alloc)})
    table = pd.DataFrame(rows, dtype=object)
    if table.empty:
        return Drawn(why_not="no case of /bw/cases, /allocmatrix/cases or /um/cases ran with an allocator; "
                             f"measured by `{ALLOC_COMMAND}`")
    if len(ctx.topologies) == 1:
        table = table.drop(columns="host")
    csv = ctx.out / "allocation_apis.csv"
    outfiles.write_csv(table, csv)
    outfiles.write_csv(evidence, ctx.out / "allocation_apis_placements.csv")
    used = set(evidence["run"]) | (set(bw["run"]) if not bw.empty and "run" in bw else set())
    notes = [
        "Documented: the API (docs/design.md's allocator table, src/core/allocators.cpp) and the paper's Table II "
        "placement and automatic migration. Measured in these runs: where each buffer's pages were after its "
        "case (the placement columns of /bw/cases, /allocmatrix/cases and /um: move_pages, CUDA range "
        "attributes), counted per buffer, and whether a CPU or GPU case with the allocator ran (/bw/cases); "
        "'node reports' is the topology's path table where no case measured it.",
        "allocation_apis_placements.csv lists every located buffer.",
        *translation.notes(),
    ]
    return Drawn(files=[csv, ctx.out / "allocation_apis_placements.csv"], table=markdown(table), notes=notes,
                 runs=[r.name for r in ctx.runs.runs if r.name in used])
