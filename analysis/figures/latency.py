"""Figs. 11-13: pointer-chase latency of every processor to every memory at the largest
buffer (Fig. 11), against the buffer size with the caches marked (Fig. 12), and the
compare-and-swap ping-pong round trip between processors per memory of the flag (Fig. 13).
Memories are named by their role seen from the processor; a case whose pages left the
memory it named is drawn under the memory they ended in, one of unknown placement not at all."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm

from ..model.roles import ROLE_ORDER, by_role, labelled, role
from ..model.vocabulary import gpu_of_memory, is_grace, kind_word, memory
from ..render.figures import bytes_axis, text_in
from ..render.style import COLUMN_IN, PAGE_IN, colour_bar, heat_map, log_axis, readable, series
from ..results.cases import drawn_under, natural_key
from ..render.items import Context, Drawn, Grid, faceted, item, mark, mark_cells

CHASE_COMMAND = "mempath chase --all"
PINGPONG_COMMAND = "mempath pingpong"
#: Allocator preferred where one memory was chased through several: the plain NUMA or
#: device allocation first, managed memory (which migrates) last.
ALLOC_PREFERENCE = ("numa", "device", "system", "pinned", "registered", "managed")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--", "**", "||", "OO")


def _role_style(r: str) -> int:
    return ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER)


def _size(value: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def processors(topology: Mapping[str, Any], names) -> list[str]:
    """``names`` in the topology's processor order (cpu0-3, then gpu0-3)."""
    order = [p["name"] for p in topology.get("processors", [])]
    return sorted(set(names), key=lambda n: (order.index(n) if n in order else len(order), natural_key(n)))


def _drawn(ctx: Context, cases: pd.DataFrame, what: str, name: Callable[[Any], str]
           ) -> tuple[pd.DataFrame, list[str]]:
    """The cases with ``drawn``, the memory each is drawn under (results.cases.drawn_under,
    '' for none), and the note naming those drawn nowhere (``name`` of a row)."""
    cases = cases.assign(drawn=[drawn_under(ctx.topologies.get(r.host, {}), r.mem, r.alloc, r.placement)[0]
                                for r in cases.itertuples()])
    lost = cases[cases["drawn"] == ""]
    if lost.empty:
        return cases, []
    return cases, [f"Not drawn, {what} of unknown or mixed placement: "
                   + ", ".join(sorted({name(r) for r in lost.itertuples()})) + "."]


def chase_points(ctx: Context) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The random-chain chase cases that stand for their path, one allocator per processor
    and memory: a row per (host, pu, drawn memory, size) with ``ns``, the median over the
    runs; notes on what was left out; the runs drawn."""
    cases = ctx.table("chase/cases")
    notes: list[str] = []
    if cases.empty:
        return cases, notes, []
    ran = cases[(cases["status"] == "ok") & (cases["pattern"] == "random")].copy()
    if "locality_bytes" in ran:  # a chain kept within TLB-sized groups measures something else
        ran = ran[(ran["locality_bytes"] < 0) | (ran["locality_bytes"] >= ran["size_bytes"])]
    ran, notes = _drawn(ctx, ran, "pages", lambda r: f"{r.pu} {r.alloc} {r.mem}")
    moved = ran[(ran["drawn"] != "") & (ran["drawn"] != ran["mem"])]
    if not moved.empty:
        notes.append("Drawn where the pages were, not where asked: " + ", ".join(
            sorted({f"{r.pu} {r.alloc} asked {r.mem}, pages on {r.drawn}" for r in moved.itertuples()})) + ".")
    ran = ran[ran["drawn"] != ""]
    if ran.empty:
        return ran, notes, []
    # One allocator per processor and memory: the preferred one, plain pages before huge.
    rank = {a: i for i, a in enumerate(ALLOC_PREFERENCE)}
    ran["alloc_rank"] = [rank.get(a, len(rank)) for a in ran["alloc"]]
    ran["huge"] = ran["huge_pages"].fillna(0).astype(int) if "huge_pages" in ran else 0
    chosen = ran.sort_values(["alloc_rank", "huge"]).groupby(["host", "pu", "drawn"], sort=False).head(1)
    keep = chosen[["host", "pu", "drawn", "alloc", "huge"]]
    ran = ran.merge(keep, on=["host", "pu", "drawn", "alloc", "huge"])
    points = (ran.groupby(["host", "pu", "drawn", "alloc", "size_bytes"], as_index=False)
              .agg(ns=("median_ns", "median")))
    return points, notes, ctx.runs_of(ran)


def _panels_of(ctx: Context, points: pd.DataFrame) -> list[tuple[str, str]]:
    out = []
    for host in dict.fromkeys(points["host"]):
        topology = ctx.topologies.get(host, {})
        out += [(host, pu) for pu in processors(topology, points.loc[points["host"] == host, "pu"])]
    return out


@item("latency_by_memory", "Fig. 11", "Memory access latency of every processor to every memory (pointer chase)",
      "figure", ("chase/cases",), CHASE_COMMAND, order=11)
def latency_by_memory(ctx: Context) -> Drawn:
    points, notes, runs = chase_points(ctx)

    def grid(points: pd.DataFrame) -> Grid:
        top = points.loc[points.groupby(["host", "pu", "drawn"])["size_bytes"].transform("max")
                         == points["size_bytes"]].drop_duplicates(["host", "pu", "drawn"])
        keys = _panels_of(ctx, top)
        several_hosts = len({h for h, _ in keys}) > 1
        xmax = float(top["ns"].max())

        def mine(host: str, pu: str) -> pd.DataFrame:
            return top[(top["host"] == host) & (top["pu"] == pu)].set_index("drawn")

        def draw(ax: Axes, panel: tuple[str, str]) -> None:
            topology = ctx.topologies.get(panel[0], {})
            bars = mine(*panel)
            mems = by_role(topology, panel[1], list(bars.index))
            y = np.arange(len(mems))[::-1]
            for yi, mem in zip(y, mems):
                r = role(topology, panel[1], mem) or mem
                value = float(bars.loc[mem, "ns"])
                ax.barh(yi, value, height=0.7, color=series(_role_style(r))["color"], label=r,
                        hatch=HATCHES[_role_style(r) % len(HATCHES)], edgecolor="black", linewidth=0.4)
                ax.text(value + 0.01 * xmax, yi, f"{value:.0f}", va="center", ha="left", fontsize=7)
                mark(ax, r, memory=mem, latency_ns=value, buffer_bytes=int(bars.loc[mem, "size_bytes"]),
                     alloc=bars.loc[mem, "alloc"])
            ax.set_yticks(y, [labelled(topology, panel[1], m) for m in mems])
            ax.set_xlim(0, xmax * 1.18)
            ax.set_ylim(-0.6, len(mems) - 0.4)
            ax.set_xlabel("latency per load (ns, median)")
            ax.grid(True, axis="x")

        def title(panel: tuple[str, str]) -> str:
            sizes = sorted({int(s) for s in mine(*panel)["size_bytes"]})
            return f"{panel[0]}: " * several_hosts + f"{panel[1]} ({' / '.join(_size(s) for s in sizes)} buffer)"

        bars_per_panel = max(len(mine(h, p)) for h, p in keys)
        return Grid(keys, draw, title, PAGE_IN, max(1.4, 0.5 + 0.125 * bars_per_panel), max_cols=2,
                    processor=tuple)

    caption = ["Latency of one dependent load: a single random cycle over every 64-byte line of the buffer, "
               "one CPU thread pinned to a core of the socket, or one GPU thread; median over repetitions and "
               "runs, at the largest buffer chased on each path.",
               "Where a memory was chased through several allocators, the first of "
               f"{', '.join(ALLOC_PREFERENCE)} is shown."]
    return faceted(ctx, "latency_by_memory", points, f"no random pointer-chase case finished; measured by "
                   f"`{CHASE_COMMAND}`", grid, notes, caption, runs)


def _caches(ctx: Context, host: str, pu: str) -> list[tuple[str, int, str]]:
    """(level, bytes, source) of a processor's caches: /chase/caches where the run has it,
    else the topology (a CPU's last-level cache, a GPU's L2)."""
    table = ctx.table("chase/caches")
    if not table.empty and "level" in table:
        mine = table[(table["host"] == host) & (table["pu"] == pu)]
        if not mine.empty:
            return [(str(r.level), int(r.bytes), str(r.source)) for r in
                    mine.drop_duplicates(["level"]).sort_values("bytes").itertuples()]
    proc = next((p for p in ctx.topologies.get(host, {}).get("processors", []) if p.get("name") == pu), {})
    if proc.get("kind") == "gpu" and proc.get("l2_bytes"):
        return [("L2", int(proc["l2_bytes"]), "topology")]
    if proc.get("kind") == "cpu" and proc.get("cache_bytes"):
        return [("LLC", int(proc["cache_bytes"]), "topology")]
    return []


def _compact(names: list[str]) -> str:
    """numa1, numa2, numa3 -> numa1,2,3 (names of one prefix joined)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        prefix = name.rstrip("0123456789")
        groups.setdefault(prefix, []).append(name[len(prefix):])
    return " ".join(p + ",".join(sorted(n, key=lambda x: int(x) if x else -1)) for p, n in groups.items())


def _spread(ys: list[float], gap: float) -> list[float]:
    """Positions for labels wanted at the sorted ``ys``, at least ``gap`` apart, each
    group of crowded labels centred on where its labels want to be."""
    pos, clusters = list(ys), [[i] for i in range(len(ys))]
    merged = True
    while merged:
        merged = False
        for k in range(len(clusters) - 1):
            low, high = clusters[k], clusters[k + 1]
            if pos[high[0]] - pos[low[-1]] < gap - 1e-12:
                both = low + high
                start = sum(ys[i] for i in both) / len(both) - (len(both) - 1) * gap / 2
                for j, i in enumerate(both):
                    pos[i] = start + j * gap
                clusters[k:k + 2] = [both]
                merged = True
                break
    return pos


def _name_start(ax: Axes, x: float, name: str, caches: Sequence[float]) -> float:
    """Where the name of a line ending at ``x`` starts: a little right of its end, unless a
    cache line lies within the name's length there (the cache's own name stands left of its
    line: a line of few sizes that ended just before a cache had its name written over the
    cache's); then right of that cache. The length in octaves from the panel's width as
    laid out before the layout engine's margins (a little wider: the name a little longer)."""
    low, high = ax.get_xlim()
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    octaves = (text_in(name) + 0.1) / width_in * math.log2(high / low)
    start = x * 1.4
    for cache in sorted(caches):
        if start <= cache <= start * 2 ** octaves:
            start = cache * 1.4
    return start


def _name_room(ax: Axes, low: float, high: float, names: Sequence[str]) -> float:
    """The octaves right of the data that the lines' names need (the longest), so that the
    axis ends where the names do, not decades past the last size measured."""
    if not names:
        return 0.5
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    name_in = max(text_in(_compact([n])) for n in names) + 0.15
    data = math.log2(high / low)
    return max(1.0, name_in * data / max(width_in - name_in, 0.5 * width_in))


def _clear_side(ax: Axes, size: float, label: str, points: pd.DataFrame, span: tuple[float, float]) -> bool:
    """Whether a cache's label (rotated, left of its line) goes at the top of the panel
    rather than its foot: the side where no line passes over the label's height, else the
    one the lines pass farther from (latency rises with the size: a small cache's label is
    clear at the top, a large one's at the foot)."""
    height = text_in(label) / (ax.get_position().height * ax.figure.get_figheight())
    low, high = math.log10(span[0]), math.log10(span[1])
    near = points[(points["size_bytes"] >= size / 2) & (points["size_bytes"] <= size * 1.2)]["ns"]
    ys = [(math.log10(v) - low) / (high - low) for v in near if v > 0] or [0.5]
    top_gap, foot_gap = 1 - max(ys) - height, min(ys) - height
    return top_gap >= 0 or top_gap >= foot_gap


def _end_labels(ax: Axes, ends: list[tuple[float, float, str, str]], span: tuple[float, float],
                caches: Sequence[float] = ()) -> None:
    """Name the lines at their right end: lines of one colour ending at (nearly) the same
    latency share one name (numa1,2,3), and the names are spread so that none overlaps
    (log y: the gap is a share of the decades shown), none over a cache's (``caches``,
    the sizes marked: _name_start)."""
    if not ends:
        return
    low, high = math.log10(span[0]), math.log10(span[1])
    gap = (high - low) * 0.08
    groups: list[list[tuple[float, float, str, str]]] = []
    for end in sorted(ends, key=lambda e: (e[3], e[1])):
        last = groups[-1][-1] if groups else None
        if last and last[3] == end[3] and abs(math.log10(end[1]) - math.log10(last[1])) < gap / 3:
            groups[-1].append(end)
        else:
            groups.append([end])
    labels = sorted(((max(e[0] for e in g), 10 ** (sum(math.log10(e[1]) for e in g) / len(g)),
                      _compact([e[2] for e in g]), g[0][3]) for g in groups), key=lambda e: e[1])
    pos = _spread([math.log10(e[1]) for e in labels], gap)
    shift = max(0.0, pos[-1] - (high - gap / 2)) - max(0.0, (low + gap / 2) - pos[0])
    for (x, _, text, colour), ly in zip(labels, pos):
        # Plain text, no arrow: a connector costs a path clipping per label at every draw.
        ax.text(_name_start(ax, x, text, caches), 10 ** (ly - shift), text, fontsize=7, va="center",
                ha="left", color=readable(colour))


@item("latency_by_size", "Fig. 12", "Memory access latency against buffer size, caches marked (pointer chase)",
      "figure", ("chase/cases", "chase/caches"), CHASE_COMMAND, order=12)
def latency_by_size(ctx: Context) -> Drawn:
    points, notes, runs = chase_points(ctx)
    one_size: list[str] = []
    cache_words: list[str] = []

    def grid(points: pd.DataFrame) -> Grid:
        keys = _panels_of(ctx, points)
        several_hosts = len({h for h, _ in keys}) > 1

        def draw(ax: Axes, panel: tuple[str, str]) -> None:
            host, pu = panel
            topology = ctx.topologies.get(host, {})
            mine = points[(points["host"] == host) & (points["pu"] == pu)].drop_duplicates(["drawn", "size_bytes"])
            lo, hi = float(mine["ns"].min()) / 1.6, float(mine["ns"].max()) * 1.6
            xs = mine["size_bytes"].astype(float)
            caches = _caches(ctx, host, pu)
            xlo = min([xs.min(), *[c[1] for c in caches]]) / 2
            xhi = max([xs.max(), *[c[1] for c in caches]])
            ends = []
            for mem in by_role(topology, pu, list(mine["drawn"])):
                line = mine[mine["drawn"] == mem].sort_values("size_bytes")
                r = role(topology, pu, mem) or mem
                style = series(_role_style(r))
                ax.plot(line["size_bytes"].to_numpy(float), line["ns"].to_numpy(float), label=r, **style)
                mark(ax, r, memory=mem, buffer_bytes=line["size_bytes"].to_numpy(int),
                     latency_ns=line["ns"].to_numpy(float), alloc=line["alloc"].to_numpy())
                ends.append((float(line["size_bytes"].iloc[-1]), float(line["ns"].iloc[-1]), mem, style["color"]))
                if len(line) == 1:
                    one_size.append(f"{pu} {mem}")
            bytes_axis(ax, [xlo * 2, xhi])
            ax.set_xlim(xlo, xhi * 2 ** _name_room(ax, xlo, xhi, [e[2] for e in ends]))
            ax.set_ylim(lo, hi)
            log_axis(ax, "y")
            for level, size, source in caches:
                ax.axvline(size, color="0.45", linestyle=":", linewidth=0.8)
                mark(ax, f"{level} cache ({source})", buffer_bytes=size)
                label = f"{level} {_size(size)}"
                at_top = _clear_side(ax, size, label, mine, (lo, hi))
                ax.annotate(label, (size, 1.0 if at_top else 0.0), xycoords=("data", "axes fraction"), rotation=90,
                            va="top" if at_top else "bottom", ha="right", fontsize=7, color="0.3")
                cache_words.append(f"{host} " * several_hosts + f"{pu} {level} {_size(size)} ({source})")
            ax.grid(True, which="major")
            _end_labels(ax, ends, (lo, hi), [c[1] for c in caches])
            ax.set_xlabel("buffer size (bytes, log2)")
            ax.set_ylabel("latency per load (ns)")

        return Grid(keys, draw, lambda panel: f"{panel[0]}: " * several_hosts + panel[1], PAGE_IN, 1.9, max_cols=2,
                    processor=tuple)

    drawn = faceted(ctx, "latency_by_size", points, f"no random pointer-chase case finished; measured by "
                    f"`{CHASE_COMMAND}`", grid, notes, runs=runs)
    if drawn.files:  # the caption names what the panels found: their caches, their single points
        drawn.notes[:0] = [
            "Latency of one dependent load over a random cycle through the whole buffer, median over "
            "repetitions and runs; each line is one memory, coloured by its role seen from the processor and "
            "named at its end; dotted vertical lines: the processor's caches.",
            "Caches: " + "; ".join(dict.fromkeys(cache_words)) + " (sysfs: the chasing core's; cuda: the "
            "runtime's L2; table: mempath's L1 by compute capability; topology: the run's topology, "
            "where the file has no /chase/caches)." if cache_words else "No cache size known."]
    if one_size:
        drawn.notes.append("One buffer size only (a point, no line): " + ", ".join(one_size) + f"; "
                           f"`{CHASE_COMMAND}` sweeps the sizes (4 KiB to 1 GiB or more).")
    return drawn


def home(topology: Mapping[str, Any], mem: str) -> str:
    """A memory named by where it sits, for a figure seen from two processors at once:
    ``LPDDR of superchip 0 (numa0)``, ``HBM of gpu0 (numa4)``, ``device memory of gpu0``."""
    m = memory(topology, mem)
    word = kind_word(topology, mem)
    if m.get("kind") == "host":
        # On a Grace node a host node is the LPDDR of the superchip whose GPU names it; an
        # x86 socket's DDR is no GPU's, whichever GPU its PCIe holds.
        owner = next((p["name"] for p in topology.get("processors", [])
                      if p.get("kind") == "gpu" and p.get("host_numa") == m.get("numa")), None)
        return f"{word} of superchip {owner[3:]} ({mem})" if is_grace(topology) and owner else f"{word} ({mem})"
    if m.get("kind") == "hbm":
        return f"{word} of gpu{m.get('gpu')} ({mem})"
    if m.get("kind") == "device":
        return f"{word} of {mem}"
    return mem


def _ns_text(value: float) -> str:
    """ns in at most four characters: 241, 1.5k, 12k, 1.2M."""
    if not math.isfinite(value):
        return ""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.2g}{suffix}" if value < 10 * scale else f"{value / scale:.0f}{suffix}"
    return f"{value:.0f}"


def _pairs(part: pd.DataFrame) -> str:
    """The pairs of some cases, listed when few, counted when many."""
    pairs = list(dict.fromkeys(f"{a}-{b}" for a, b in zip(part["a"], part["b"])))
    return ", ".join(pairs) if len(pairs) <= 4 else f"{len(pairs)} pairs"


@item("pingpong", "Fig. 13", "Ping-pong round trip between processors, by memory of the flag (CAS)", "figure",
      ("pingpong/cases",), PINGPONG_COMMAND, order=13)
def pingpong(ctx: Context) -> Drawn:
    cases = ctx.table("pingpong/cases")
    if cases.empty:
        return Drawn(why_not=f"no /pingpong/cases; measured by `{PINGPONG_COMMAND}`")
    ok, notes = _drawn(ctx, cases[cases["status"] == "ok"], "flag", lambda r: f"{r.a}-{r.b} {r.alloc} {r.mem}")
    moved = ok[(ok["drawn"] != "") & (ok["drawn"] != ok["mem"])]
    if not moved.empty:
        notes.append("Drawn under the memory the flag's page ended in, not the one asked: " + "; ".join(
            f"{alloc} flag asked on {mem}, found on {drawn}: {_pairs(part)}"
            for (alloc, mem, drawn), part in moved.groupby(["alloc", "mem", "drawn"])) + ".")
    ok = ok[ok["drawn"] != ""]
    if ok.empty:
        reasons = "; ".join(dict.fromkeys(f"{r.status}: {r.reason}" for r in cases.itertuples() if r.reason))
        return Drawn(why_not=f"no ping-pong case finished ({reasons or 'none ran'}); measured by "
                             f"`{PINGPONG_COMMAND}`", notes=notes)
    cells = ok.groupby(["host", "drawn", "alloc", "a", "b"])["median_ns"].median()
    agents_of = {host: processors(ctx.topologies.get(host, {}), set(cases.loc[cases["host"] == host, "a"])
                                  | set(cases.loc[cases["host"] == host, "b"])) for host in dict.fromkeys(ok["host"])}
    caption = ["Round trip: one compare-and-swap exchange from agent a to agent b and back, on a one-byte flag "
               "alone in its pair of cache lines; median over the round trips, then over the runs; cells in ns "
               "(k: thousand, M: million); grey: not measured. cpuN x cpuN: two cores of socket N.",
               "Each panel is one memory and allocator of the flag, named by the superchip it belongs to "
               "(the role differs for the two agents of a cell)."]
    skipped = cases[cases["status"] != "ok"].fillna({"reason": ""})
    if not skipped.empty:
        notes.append("Not measured: " + "; ".join(
            f"{mem} {alloc}, {status} ({reason or 'no reason given'}): {_pairs(part)}"
            for (mem, alloc, status, reason), part in skipped.groupby(["mem", "alloc", "status", "reason"])) + ".")
    return faceted(ctx, "pingpong", ok, "", lambda ok: _pingpong_grid(ctx, cells, agents_of), notes, caption)


def _pingpong_grid(ctx: Context, cells: pd.Series, agents_of: Mapping[str, list[str]]) -> Grid:
    """Fig. 13's panels: one heat map of the round trips (ping a x pong b) per memory and
    allocator of the flag."""
    flags = []
    for host in agents_of:
        topology = ctx.topologies.get(host, {})
        order = [m["name"] for m in topology.get("memories", [])]
        mine = {(d, a) for h, d, a, *_ in cells.index if h == host}
        allocs = {a: i for i, a in enumerate(ALLOC_PREFERENCE)}
        flags += [(host, d, a) for d, a in sorted(mine, key=lambda da: (
            order.index(da[0]) if da[0] in order else len(order), allocs.get(da[1], len(allocs)), da[1]))]
    several_hosts = len({h for h, *_ in flags}) > 1
    most = max(len(a) for a in agents_of.values())
    values = cells.to_numpy(float)
    norm = LogNorm(values.min(), max(values.max(), values.min() * 1.01))
    images = []

    def draw(ax: Axes, flag: tuple[str, str, str]) -> None:
        host, mem, alloc = flag
        agents = agents_of[host]
        grid = np.full((len(agents), len(agents)), np.nan)
        for (a, b), value in cells.loc[host, mem, alloc].items():
            grid[agents.index(a), agents.index(b)] = value
            if np.isnan(grid[agents.index(b), agents.index(a)]) and (b, a) not in cells.loc[host, mem, alloc].index:
                grid[agents.index(b), agents.index(a)] = value  # a round trip is the same both ways
        mark_cells(ax, f"flag {mem} {alloc}", grid, agents, agents, ("ping", "pong", "round_trip_ns"))
        images.append(heat_map(ax, grid, norm, _ns_text, agents, agents, "ping (a, times)", "pong (b)", aspect="auto"))

    def title(flag: tuple[str, str, str]) -> str:
        host, mem, alloc = flag
        return f"{host}: " * several_hosts + f"flag: {home(ctx.topologies.get(host, {}), mem)},\n{alloc}"

    def finish(fig, axes: list[Axes]) -> None:
        colour_bar(fig, images[-1], axes, "round trip (ns, median)")

    def owner(flag: tuple[str, str, str]) -> tuple[str, str]:
        """The processor whose own memory holds the flag: the paper's Fig. 13 places every flag on
        GH-0 (cpu0's LPDDR, gpu0's HBM), so those panels make the main figure."""
        host, mem, _ = flag
        return host, memory_owner(ctx.topologies.get(host, {}), mem)

    return Grid(flags, draw, title, PAGE_IN if len(flags) > 1 or most > 4 else COLUMN_IN,
                max(1.7, 0.22 * most + 0.7), max_cols=2, finish=finish, legend=False,
                processor=owner)


def memory_owner(topology: Mapping[str, Any], mem: str) -> str:
    """The processor a memory is local to: a GPU's HBM node or device memory is that GPU's, a
    host node the socket's whose NUMA node it is (``mem`` itself where the topology does not say)."""
    m = memory(topology, mem)
    if gpu_of_memory(m) is not None:
        return f"gpu{m['gpu']}"
    return next((p["name"] for p in topology.get("processors", [])
                 if p.get("kind") == "cpu" and p.get("numa") is not None and p.get("numa") == m.get("numa")), mem)
