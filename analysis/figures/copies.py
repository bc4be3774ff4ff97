"""The paper's copy figures: Fig. 9 (copy throughput of each processor from every source
to every destination memory), Fig. 10 (the same against CPU threads and GPU grid size, for
the system-allocated memories of one superchip) and Fig. 5 (cudaMemcpy between every
source and destination allocator).

Throughput is the paper's (sec. III-D): the buffer's size over the copy's time, each byte
counted once. /bw/cases counts the bytes read and written (``bytes`` = 2 x size x
passes), so its median is converted: size x passes / bytes x median_GBps (half of it).
/allocmatrix's rate is already size / time.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm, Normalize

from ..model.roles import labelled, role, role_rank
from ..model.vocabulary import HBM, HOST_WORDS, gpu_of_memory, memory
from ..render import style
from ..results.cases import best, by_threads, drawn_under, memory_aliases, natural_key, relocated
from ..results.kinds import ALLOC_ORDER
from . import published
from .paths import COMPARED, compact, compare, paper_processors, pu_title, run_gpu, with_roles
from ..render.items import Comparison, Context, Drawn, Grid, faceted, item

COPY_COMMAND = "mempath bw --all --op copy"
SCALING_COMMAND = ("mempath bw --pu cpuN --op copy --mem M --dst-mem M' --threads sweep; the same with "
                   "--pu gpuN (a grid sweep)")
ALLOC_COMMAND = "mempath allocmatrix --mem LIST (each host node: numaN of the GPU's LPDDR, its HBM node, a peer's)"
THROUGHPUT = "copy GB/s = buffer size / time (each byte once: half the read + written rate)"
LOCAL_ROLES = tuple(f"local {word}" for word in (*HOST_WORDS, HBM))
SYSTEM_ALLOCS = ("system", "numa")


def throughput(cases: pd.DataFrame, column: str = "median_GBps") -> pd.Series:
    """The paper's copy throughput (size / time) of /bw copy cases from ``column`` (bytes
    read + written / time): x size x passes / bytes; half where ``bytes`` is not recorded."""
    rate = pd.to_numeric(cases[column], errors="coerce")
    if "bytes" not in cases or "size_bytes" not in cases:
        return rate / 2.0
    passes = pd.to_numeric(cases["passes"], errors="coerce").fillna(1) if "passes" in cases else 1
    moved = pd.to_numeric(cases["bytes"], errors="coerce")
    share = pd.to_numeric(cases["size_bytes"], errors="coerce") * passes / moved.where(moved > 0)
    return rate * share.fillna(0.5)


def _copies(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """Copy cases that ran alone and out of cache, under the memories their pages were on,
    of the paper's processors, with ``tput`` (paper throughput) and the roles of both ends."""
    cases = ctx.table("bw/cases")
    if cases.empty or "op" not in cases:
        return pd.DataFrame(), []
    moved, notes = relocated(cases[cases["op"] == "copy"], ctx.topologies)
    if moved.empty:
        return moved, notes
    keep = {(h, p) for h, t in ctx.topologies.items() for p in paper_processors(t)}
    moved = moved[[(h, p) in keep for h, p in zip(moved["host"], moved["pu"])]]
    moved = moved[(moved["noise"].fillna("") == "") & (moved["cache_resident"].fillna(0).astype(int) != 1)]
    if moved.empty:
        return moved, notes
    moved = moved.assign(tput=throughput(moved), tput_min=throughput(moved, "min_GBps"),
                         tput_max=throughput(moved, "max_GBps"))
    moved = with_roles(with_roles(moved, ctx.topologies, "pu", "mem", "src_role"), ctx.topologies, "pu", "dst_mem",
                       "dst_role")
    return moved.reset_index(drop=True), notes


def _owner(topology: Mapping[str, Any], mem: str) -> str:
    """The superchip (or socket) a memory belongs to: ``chipG`` for a GPU's memories and
    its host node, ``numaN`` for a host node without a GPU."""
    m = memory(topology, mem)
    if gpu_of_memory(m) is not None:
        return f"chip{m['gpu']}"
    gpu = next((p.get("gpu") for p in topology.get("processors", [])
                if p.get("kind") == "gpu" and p.get("host_numa") == m.get("numa")), None)
    return f"chip{gpu}" if gpu is not None else mem


def shown_memories(topology: Mapping[str, Any], pu: str, mems: Sequence[str]) -> tuple[list[str], list[str]]:
    """The memories a processor's panel shows, in role order: its local ones and those of
    its first peer (lowest id); and the peers' memories left to the CSV."""
    roles = {m: role(topology, pu, m) or m for m in mems}
    peers = [m for m in mems if roles[m].startswith("peer ")]
    first = min((_owner(topology, m) for m in peers), key=natural_key, default=None)
    shown = [m for m in mems if not roles[m].startswith("peer ") or _owner(topology, m) == first]
    shown.sort(key=lambda m: (role_rank(roles[m]), natural_key(m)))
    return shown, sorted(set(mems) - set(shown), key=natural_key)


def _cell_text(value: float) -> str:
    if not math.isfinite(value):
        return ""
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def _norm(values: np.ndarray) -> Normalize:
    """One colour scale for every panel: logarithmic where the values span over 10x."""
    good = values[np.isfinite(values) & (values > 0)]
    if good.size and good.max() > 10 * good.min():
        return LogNorm(good.min(), good.max())
    return Normalize(0, good.max() if good.size else 1)


def _heat(ax: Any, grid: np.ndarray, norm: Normalize) -> Any:
    ax.set_facecolor("0.88")
    return ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", norm=norm, aspect="auto")


def cell_texts(fig: Any, heats: Sequence[tuple[Any, Any, np.ndarray]]) -> list[Any]:
    """Write each cell's value at 7 pt; a panel whose cells, once laid out, are narrower
    than its widest value loses its numbers again. Returns the panels left without them."""
    written = []
    for ax, image, grid in heats:
        if ax.figure is not fig:  # a panel of the figure's other page
            continue
        written.append((ax, grid, style.cell_texts(ax, image, grid, _cell_text)))
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    bare = []
    for ax, grid, texts in written:
        cell = ax.get_window_extent().width / max(1, grid.shape[1])
        if texts and max(t.get_window_extent(renderer).width for t in texts) > cell:
            for t in texts:
                t.remove()
            bare.append(ax)
    return bare


def _ids_title(topology: Mapping[str, Any], pu: str, shown: Sequence[str]) -> str:
    """The memories of a panel's roles: ``local numa0,4 gpu0`` / ``peer numa1,12 gpu1``."""
    local = [m for m in shown if not (role(topology, pu, m) or "").startswith("peer ")]
    peer = [m for m in shown if (role(topology, pu, m) or "").startswith("peer ")]
    lines = [f"local {compact(local)}"] + ([f"peer {compact(peer)}"] if peer else [])
    return "\n".join(lines)


# ---------------------------------------------------------------- Fig. 9

def as_hbm_nodes(frame: pd.DataFrame, topologies: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, bool]:
    """A GPU's device memory under its HBM NUMA node's name (Grace Hopper: one memory, two
    names; cudaMalloc and system allocation are then two allocators of it); whether any moved."""
    if frame.empty:
        return frame, False
    node_of = {h: {gpu: numa for numa, gpu in memory_aliases(t).items()} for h, t in topologies.items()}
    moved = False
    out = frame.copy()
    for column in ("mem", "dst_mem"):
        names = [node_of.get(h, {}).get(m, m) for h, m in zip(out["host"], out[column])]
        moved |= any(a != b for a, b in zip(names, out[column]))
        out[column] = names
    return out, moved


@item("copy_bandwidth", "Fig. 9", "Copy throughput of each processor between every pair of memories",
      "figure", ("bw/cases",), COPY_COMMAND, order=9)
def copy_bandwidth(ctx: Context) -> Drawn:
    copies, notes = _copies(ctx)
    copies, merged = as_hbm_nodes(copies, ctx.topologies)
    top = best(copies, ["host", "pu", "mem", "dst_mem"]) if not copies.empty else copies
    if top.empty:
        return Drawn(why_not="no copy case of /bw/cases ran alone, out of cache, between memories a socket or "
                             f"a GPU of the paper reaches; measured by `{COPY_COMMAND}`", notes=notes)
    top = with_roles(with_roles(top, ctx.topologies, "pu", "mem", "src_role"), ctx.topologies, "pu", "dst_mem",
                     "dst_role")
    panels = []
    for host, topo in ctx.topologies.items():
        for pu in paper_processors(topo):
            mine = top[(top["host"] == host) & (top["pu"] == pu)]
            if mine.empty:
                continue
            shown, rest = shown_memories(topo, pu, sorted(set(mine["mem"]) | set(mine["dst_mem"]), key=natural_key))
            panels.append((host, pu, shown, rest, mine))
    norm = _norm(top["tput"].astype(float).to_numpy())
    several = len(ctx.topologies) > 1
    previous: list[list[str] | None] = [None]  # the roles of the panel before
    left_out: dict[str, list[str]] = {}
    heats: list[tuple[Any, Any, np.ndarray]] = []
    bare: list[Any] = []

    def draw(ax: Any, panel: tuple[str, str, list[str], list[str], pd.DataFrame]) -> None:
        host, pu, shown, rest, mine = panel
        grid = np.full((len(shown), len(shown)), np.nan)
        for r in mine.itertuples():
            if r.mem in shown and r.dst_mem in shown:
                grid[shown.index(r.mem), shown.index(r.dst_mem)] = float(r.tput)
        heats.append((ax, _heat(ax, grid, norm), grid))
        roles = [role(ctx.topologies[host], pu, m) or m for m in shown]
        first_in_row = ax.get_subplotspec().colspan.start == 0
        ax.set_yticks(range(len(shown)), roles if first_in_row or roles != previous[0] else [""] * len(roles))
        ax.set_xticks(range(len(shown)), roles, rotation=90)
        previous[0] = roles
        ax.set_xlabel("destination memory")
        if first_in_row:
            ax.set_ylabel("source memory")
        if rest:
            left_out[f"{pu}"] = rest

    def title(panel: tuple[str, str, list[str], list[str], pd.DataFrame]) -> str:
        host, pu, shown = panel[:3]
        topo = ctx.topologies[host]
        return (f"{host}\n" if several else "") + pu_title(topo, pu) + "\n" + _ids_title(topo, pu, shown)

    def finish(fig: Any, axes: list[Any]) -> None:
        style.colour_bar(fig, heats[-1][1], axes, THROUGHPUT)
        bare.extend(cell_texts(fig, heats))

    notes = [
        "Throughput as the paper defines it (sec. III-D): buffer size / time, each byte counted once, which is "
        "half the read + written rate /bw/cases records; one colour scale for every panel "
        f"({'logarithmic' if isinstance(norm, LogNorm) else 'linear from zero'}).",
        "Each cell: the copy case of the highest median among the allocators, with all cores of a socket or a "
        "GPU's full grid; rows the source, columns the destination, each memory by its role seen from the "
        "processor (the panel's title names them); grey cells did not run alone, out of cache, on placed pages.",
        "A copy is drawn under the memories its pages were on after the run (placement, placed), not the ones it "
        "asked for.",
        *notes]
    if merged:
        notes.append("A GPU's device memory (cudaMalloc) is its HBM NUMA node under another name: both are drawn "
                     "as the HBM node, the better of the two allocators in each cell.")
    drawn = faceted(ctx, "copy_bandwidth", top, "", lambda _: Grid(
        panels, draw, title, style.PAGE_IN, 2.75, max_cols=4, finish=finish, legend=False, title_size=7,
        processor=lambda panel: (panel[0], panel[1])),
        notes, csv=(top.rename(columns={"tput": "throughput_GBps"}), COPY_CSV))
    if left_out:
        drawn.notes.append("Shown: each processor's local memories and its first peer's (the lowest id); the other "
                           "peers' copies are in copy_bandwidth.csv (" +
                           "; ".join(f"{pu}: {compact(r)}" for pu, r in list(left_out.items())[:4]) +
                           ("; ..." if len(left_out) > 4 else "") + ").")
    drawn.notes += _bare_note(bare, "copy_bandwidth")
    return drawn


COPY_CSV = ("host", "pu", "mem", "src_role", "dst_mem", "dst_role", "asked_mem", "asked_dst_mem", "alloc",
            "dst_alloc", "kernel", "threads", "throughput_GBps", "median_GBps", "size_bytes", "bytes", "run")


def _bare_note(bare: Sequence[Any], key: str) -> list[str]:
    """The caption's word on heat-map panels too narrow for their numbers."""
    return [f"{len(bare)} panel(s) carry no numbers in their cells (too narrow to print them at 7 pt): "
            f"{key}.csv has them."] if bare else []


# ---------------------------------------------------------------- Fig. 10

def _sweeps(copies: pd.DataFrame, ctx: Context) -> dict[str, tuple[str, str, pd.DataFrame]]:
    """Per processor kind: the first (host, processor) with a sweep of local,
    system-allocated copies (several thread counts), its points per (source, destination)."""
    out: dict[str, tuple[str, str, pd.DataFrame]] = {}
    if copies.empty:
        return out
    local = copies[copies["src_role"].isin(LOCAL_ROLES) & copies["dst_role"].isin(LOCAL_ROLES)
                   & copies["alloc"].isin(SYSTEM_ALLOCS)
                   & copies["dst_alloc"].fillna("").replace("", np.nan).fillna(copies["alloc"]).isin(SYSTEM_ALLOCS)]
    local = local[pd.to_numeric(local["threads"], errors="coerce") > 0]
    for host, topo in ctx.topologies.items():
        for pu in paper_processors(topo):
            mine = local[(local["host"] == host) & (local["pu"] == pu)]
            kind = "gpu" if pu.startswith("gpu") else "cpu"
            if kind in out or mine["threads"].nunique() < 2:
                continue
            points = by_threads(mine, ["host", "pu", "mem", "dst_mem"])
            out[kind] = (host, pu, points.assign(tput=throughput(points), tput_min=throughput(points, "min_GBps"),
                                                 tput_max=throughput(points, "max_GBps")))
    return out


def _ticks(values: Sequence[int], most: int = 8) -> list[int]:
    """Tick positions on a log2 axis: at most ``most``, the last always, none closer to the
    next than a factor 1.5 (64 and 72 threads, a sweep's last grid and the full one)."""
    step = max(1, math.ceil(len(values) / most))
    picked = list(values[::step])
    if values and picked[-1] != values[-1]:
        picked.append(values[-1])
    out: list[int] = []
    for v in reversed(picked):
        if not out or out[-1] / v >= 1.5:
            out.append(v)
    return sorted(out)


@item("copy_scaling", "Fig. 10", "Copy throughput against CPU threads and GPU grid size, one superchip",
      "figure", ("bw/cases",), SCALING_COMMAND, order=10)
def copy_scaling(ctx: Context) -> Drawn:
    copies, notes = _copies(ctx)
    sweeps = _sweeps(copies, ctx)
    if not sweeps:
        return Drawn(why_not="no processor of /bw/cases copied between its superchip's system-allocated "
                             "memories (system or numa allocator, local LPDDR/DDR and HBM) at several CPU thread "
                             f"counts or GPU grid sizes; measured by `{SCALING_COMMAND}`", notes=notes)
    kinds = [k for k in ("cpu", "gpu") if k in sweeps]
    labels: list[str] = []

    def draw(ax: Any, kind: str) -> None:
        host, pu, points = sweeps[kind]
        topo = ctx.topologies[host]
        for (src, dst), line in points.groupby(["mem", "dst_mem"], sort=False):
            name = f"{role(topo, pu, src)} -> {role(topo, pu, dst)}"
            if name not in labels:
                labels.append(name)
            look = style.series(labels.index(name))
            line = line.sort_values("threads")
            x = line["threads"].astype(int).to_numpy()
            ax.plot(x, line["tput"], label=name, **look)
            ax.fill_between(x, line["tput_min"].astype(float), line["tput_max"].astype(float),
                            color=look["color"], alpha=0.15, linewidth=0)
        ax.set_xscale("log", base=2)
        ticks = _ticks(sorted(set(points["threads"].astype(int))))
        ax.set_xticks(ticks, [f"{t // 1024}k" if t >= 10240 else str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.grid(True)
        ax.set_xlabel("CPU threads" if kind == "cpu" else "GPU threads launched (blocks of 512; last: full grid)")
        ax.set_ylabel("copy GB/s (size / time)" if kind == kinds[0] else "")

    def title(kind: str) -> str:
        host, pu, points = sweeps[kind]
        topo = ctx.topologies[host]
        mems = sorted(set(points["mem"]) | set(points["dst_mem"]), key=natural_key)
        return ((f"{host}\n" if len(ctx.topologies) > 1 else "") + f"{pu_title(topo, pu)}: " +
                ", ".join(labelled(topo, pu, m) for m in mems))

    frame = pd.concat([sweeps[k][2] for k in kinds], ignore_index=True)
    notes = [
        "Throughput = buffer size / time (each byte once; half the read + written rate /bw/cases records), the "
        "median of the case of the highest median at each thread count, band min-max of its repetitions; "
        "system-allocated buffers (system or numa allocator) of one superchip, local LPDDR and HBM.",
        "Drawn: " + "; ".join(f"{sweeps[k][1]} of {sweeps[k][0]}" for k in kinds) +
        " (the first processor of each kind with a sweep; the others are alike by symmetry and in no panel).",
        *notes]
    if "gpu" not in sweeps:
        has_gpu = any(p.startswith("gpu") for t in ctx.topologies.values() for p in paper_processors(t))
        notes.append("Not drawn: the Hopper half, " + (
            "no GPU grid sweep of local system-allocated copies in these runs (`mempath bw --pu gpuN --op copy "
            "--threads sweep`, which records the `blocks` column; a GPU that cannot reach pageable memory "
            "copies no system-allocated buffer)" if has_gpu else "no GPU in these runs"))
    if "cpu" not in sweeps:
        notes.append("Not drawn: the Grace half, no CPU thread sweep of local system-allocated copies "
                     "(`mempath bw --pu cpuN --op copy --threads sweep`).")
    return faceted(ctx, "copy_scaling", frame, "", lambda _: Grid(
        kinds, draw, title, style.PAGE_IN if len(kinds) > 1 else style.COLUMN_IN, 2.3, max_cols=2, title_size=7),
        notes, csv=(frame.rename(columns={"tput": "throughput_GBps", "tput_min": "min_throughput_GBps",
                                          "tput_max": "max_throughput_GBps"}), SCALING_CSV))


SCALING_CSV = ("host", "pu", "mem", "dst_mem", "src_role", "dst_role", "alloc", "dst_alloc", "threads", "blocks",
               "throughput_GBps", "min_throughput_GBps", "max_throughput_GBps", "median_GBps", "run")


# ---------------------------------------------------------------- Fig. 5


def allocmatrix_frame(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """cudaMemcpy cases that ran, with the GPU, the host node asked (``node``), where each
    buffer is drawn (``src_at``, ``dst_at``: results.cases.drawn_under) and their roles seen
    from the GPU."""
    cases = ctx.table("allocmatrix/cases")
    if cases.empty or "src_alloc" not in cases:
        return pd.DataFrame(), []
    gpus = {run: run_gpu(ctx, run, cases) for run in set(cases["run"])}
    cases = cases.assign(gpu=[gpus[r] for r in cases["run"]])
    ran = cases[(cases["status"] == "ok") & np.isfinite(pd.to_numeric(cases["median_GBps"], errors="coerce"))]
    rows, notes = [], []
    for r in ran.to_dict("records"):
        topo = ctx.topologies.get(r["host"], {})
        # A matrix of allocators keeps a buffer drawn nowhere in its allocator's row: marked
        # unplaced ("?"), under the memory it asked for.
        ends = [drawn_under(topo, mem, alloc, at)[0] or f"{mem}?"
                for mem, at, alloc in ((r["src_mem"], r.get("placement"), r["src_alloc"]),
                                       (r["dst_mem"], r.get("dst_placement"), r["dst_alloc"]))]
        node = next((m for m in (r["src_mem"], r["dst_mem"]) if not str(m).startswith("gpu")), "")
        rows.append({**r, "node": node, "src_at": ends[0], "dst_at": ends[1]})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame, notes
    # device -> device does not depend on the host node: drawn in the run's first node's panel
    first = {run: next((n for n in part["node"] if n), "") for run, part in frame.groupby("run", sort=False)}
    frame["node"] = [n or first.get(run, "") for n, run in zip(frame["node"], frame["run"])]
    for side in ("src", "dst"):
        frame[f"{side}_label"] = [_buffer_label(ctx.topologies[h], g, alloc, at, node) for h, g, alloc, at, node in zip(
            frame["host"], frame["gpu"], frame[f"{side}_alloc"], frame[f"{side}_at"], frame["node"])]
    unknown = int(frame["src_at"].str.endswith("?").sum() + frame["dst_at"].str.endswith("?").sum())
    if unknown:
        notes.append(f"{unknown} managed buffer(s) of unknown placement (the system could not locate their pages) "
                     "are labelled so, under the memory they asked for.")
    return frame, notes


def _buffer_label(topology: Mapping[str, Any], gpu: str, alloc: str, at: str, node: str) -> str:
    """A buffer's row or column label: its allocator, and the memory its pages were on where
    that is not the panel's host node (or, for device memory, the copying GPU's own): the
    panel's title names the node, and one line per label keeps 7 pt rows apart."""
    unknown = at.endswith("?")
    at = at.rstrip("?")
    text = alloc + (" (placement unknown)" if unknown else "")
    return text if at in (node, gpu) else f"{text}: {labelled(topology, gpu, at)}"


def _label_rank(label: str) -> tuple[Any, ...]:
    alloc, _, where = label.partition(": ")
    alloc = alloc.split(" (")[0]
    return (ALLOC_ORDER.index(alloc) if alloc in ALLOC_ORDER else len(ALLOC_ORDER),
            role_rank(where.split(" (")[0]), natural_key(where))


# Published cudaMemcpy values and this run's same copy: (platform "grace"/"x86", source
# (allocator, memory: "host:G" = GPU G's host node, "dev:G" = GPU G's device memory),
# destination, unit). G is a GPU index, "*" the run's measured GPU.
MEMCPY_SPECS: dict[str, tuple[str, tuple[str, str], tuple[str, str]]] = {
    "dual_gh200.l0_h0.h2d": ("grace", ("pinned", "host:0"), ("device", "dev:0")),
    "dual_gh200.l1_h1.h2d": ("grace", ("pinned", "host:1"), ("device", "dev:1")),
    "dual_gh200.h0_l0.d2h": ("grace", ("device", "dev:0"), ("pinned", "host:0")),
    "dual_gh200.h1_l1.d2h": ("grace", ("device", "dev:1"), ("pinned", "host:1")),
    "dual_gh200.l0_h1.h2d": ("grace", ("pinned", "host:0"), ("device", "dev:1")),
    "dual_gh200.l1_h0.h2d": ("grace", ("pinned", "host:1"), ("device", "dev:0")),
    "dual_gh200.h0_l1.d2h": ("grace", ("device", "dev:0"), ("pinned", "host:1")),
    "dual_gh200.h1_l0.d2h": ("grace", ("device", "dev:1"), ("pinned", "host:0")),
    "datacrunch.gh200.h2d": ("grace", ("pinned", "host:*"), ("device", "dev:*")),
    "datacrunch.h200.h2d": ("x86", ("pinned", "host:*"), ("device", "dev:*")),
    "cpu_gpu_article.a10.h2d.nvbandwidth_ce": ("x86", ("pinned", "host:*"), ("device", "dev:*")),
    "cpu_gpu_article.a10.h2d.local": ("x86", ("pinned", "host:*"), ("device", "dev:*")),
    "cpu_gpu_article.a10.h2d.remote": ("x86", ("pinned", "other:*"), ("device", "dev:*")),
}


def _memory_of(topology: Mapping[str, Any], spec: str, gpu: int) -> str | None:
    """``host:G`` -> GPU G's host node, ``dev:G`` -> gpuG, ``other:G`` -> a host node
    that is not GPU G's (the lowest); None where the node has no such memory."""
    kind, _, index = spec.partition(":")
    g = gpu if index == "*" else int(index)
    proc = next((p for p in topology.get("processors", []) if p.get("kind") == "gpu" and p.get("gpu") == g), None)
    if proc is None:
        return None
    if kind == "dev":
        return f"gpu{g}"
    hosts = sorted((m["name"] for m in topology.get("memories", []) if m.get("kind") == "host"), key=natural_key)
    mine = f"numa{proc['host_numa']}" if proc.get("host_numa") is not None else None
    if kind == "host":
        return mine
    return next((h for h in hosts if h != mine), None)


def _unit_value(gbps: float, unit: str) -> float:
    return gbps * 1e9 / 2**30 if unit == "GiB/s" else gbps


def memcpy_comparisons(frame: pd.DataFrame, ctx: Context) -> list[Comparison]:
    """The published cudaMemcpy values against this run's copy of the same allocators and
    memory roles (where the pages were); a GPU the run did not measure gives 'not measured'."""
    out = []
    for host, topo in ctx.topologies.items():
        platform = "grace" if getattr(ctx.models.get(host), "grace", False) else "x86"
        mine = frame[frame["host"] == host] if not frame.empty else frame
        measured = sorted({int(g[3:]) for g in mine["gpu"]}) if not mine.empty else []
        for pub in published.VALUES:
            spec = MEMCPY_SPECS.get(pub.key)
            if spec is None or spec[0] != platform:
                continue
            # The GPU that copies: the one whose device memory is an end ("*": the run's).
            device = next(end[1] for end in spec[1:] if end[1].startswith("dev:"))
            index = device.partition(":")[2]
            gpu = (measured[0] if measured else 0) if index == "*" else int(index)
            src = _memory_of(topo, spec[1][1], gpu)
            dst = _memory_of(topo, spec[2][1], gpu)
            copying = gpu
            if src is None or dst is None:
                continue  # the node has no such GPU or memory: not the same quantity
            rows = mine[(mine["gpu"] == f"gpu{copying}") & (mine["src_alloc"] == spec[1][0])
                        & (mine["dst_alloc"] == spec[2][0]) & (mine["src_at"] == src)
                        & (mine["dst_at"] == dst)] if not mine.empty else mine
            value = _unit_value(float(rows["median_GBps"].astype(float).median()), pub.unit) \
                if not rows.empty else math.nan
            where = (f"{host}: gpu{copying} copies {spec[1][0]} on {labelled(topo, f'gpu{copying}', src)} -> "
                     f"{spec[2][0]} on {labelled(topo, f'gpu{copying}', dst)}")
            if not rows.empty and int(rows["size_bytes"].iloc[0]) > 0:
                where += f", {int(rows['size_bytes'].iloc[0]) >> 20} MiB"
            h2d = dst.startswith("gpu")
            facts = published.run_facts(
                topo, f"gpu{copying}", [src, dst] if h2d else [dst, src],  # the host end first: its link
                definition=published.memcpy_definition(spec[1][0], spec[2][0]),
                direction="host to device" if h2d else "device to host")
            out.append(compare("cudamemcpy_allocators", pub, value, where, facts))
    return out


@item("cudamemcpy_allocators", "Fig. 5", "cudaMemcpy bandwidth between every source and destination allocator",
      "figure", ("allocmatrix/cases",), ALLOC_COMMAND, order=5)
def cudamemcpy_allocators(ctx: Context) -> Drawn:
    frame, found = allocmatrix_frame(ctx)
    return faceted(ctx, "cudamemcpy_allocators", frame, f"no case of /allocmatrix/cases ran (status ok); measured "
                   f"by `{ALLOC_COMMAND}`", lambda frame: _memcpy_grid(ctx, frame, found), found,
                   csv=(frame, MEMCPY_CSV))


def _memcpy_grid(ctx: Context, frame: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 5's heat maps and caption (``found``: allocmatrix_frame's notes)."""
    norm = _norm(frame["median_GBps"].astype(float).to_numpy())
    most = max(max(len(set(part["src_label"])), len(set(part["dst_label"])))
               for _, part in frame.groupby(["host", "gpu", "node"]))
    several = len(ctx.topologies) > 1
    heats: list[tuple[Any, Any, np.ndarray]] = []
    bare: list[Any] = []

    def draw(ax: Any, panel: tuple[str, str, str]) -> None:
        host, gpu, node = panel
        part = frame[(frame["host"] == host) & (frame["gpu"] == gpu) & (frame["node"] == node)]
        rows = sorted(set(part["src_label"]), key=_label_rank)
        cols = sorted(set(part["dst_label"]), key=_label_rank)
        grid = np.full((len(rows), len(cols)), np.nan)
        for r in part.itertuples():
            grid[rows.index(r.src_label), cols.index(r.dst_label)] = float(r.median_GBps)
        heats.append((ax, _heat(ax, grid, norm), grid))
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xticks(range(len(cols)), cols, rotation=90)
        ax.set_xlabel("destination buffer")
        ax.set_ylabel("source buffer")

    def title(panel: tuple[str, str, str]) -> str:
        host, gpu, node = panel
        topo = ctx.topologies[host]
        return ((f"{host}\n" if several else "") + f"{pu_title(topo, gpu)} copies,\nhost buffers asked on\n"
                f"{labelled(topo, gpu, node) if node else 'no host node'}")

    def finish(fig: Any, axes: list[Any]) -> None:
        style.colour_bar(fig, heats[-1][1], axes, "cudaMemcpy GB/s = size / time (each byte once)")
        bare.extend(cell_texts(fig, heats))

    skipped = ctx.table("allocmatrix/cases")
    skipped = skipped[skipped["status"] != "ok"] if "status" in skipped else skipped.iloc[:0]
    notes = [
        "Each cell: the median of the timed cudaMemcpy calls (cudaMemcpyAsync + stream synchronise, host clock, "
        "warm-up discarded) from a source to a destination buffer, GB/s = size / time (each byte once); one "
        f"colour scale for every panel ({'logarithmic' if isinstance(norm, LogNorm) else 'linear from zero'}).",
        "Rows (source buffers) and columns (destination buffers) name the allocator, and the memory its pages "
        "were on after the copies (placement, seen from the GPU that copies) where that is not the panel's host "
        "node or, for device memory, the copying GPU's own: a managed buffer the copies pulled into HBM is an "
        "HBM buffer.",
        "One panel per host node the buffers were asked on; device -> device copies are measured once, in the "
        "first node's panel.",
        *found]
    comparisons = memcpy_comparisons(frame, ctx)

    def caption() -> list[str]:  # once drawn: the cells whose text was left out
        lines = [*notes, *_bare_note(bare, "cudamemcpy_allocators")]
        if not skipped.empty:
            lines.append(f"Not drawn: {len(skipped)} case(s) that did not run ({'; '.join(sorted(set(skipped['status'] + ': ' + skipped['reason'].fillna(''))))[:300]}).")
        if comparisons:
            lines.append(COMPARED.replace("the median over the node's processors of that kind",
                                          "the copy by the GPU the published value names (GPU0, GPU1), or the "
                                          "run's GPU where it names none; a pinned buffer where the text's host "
                                          "buffer is pinned or unnamed"))
        return lines
    # two lines of 7 pt per row, and the title, rotated column labels and colour bar besides
    return Grid(list(dict.fromkeys(zip(frame["host"], frame["gpu"], frame["node"]))), draw, title, style.PAGE_IN,
                1.9 + 0.26 * most, max_cols=2, finish=finish, legend=False, title_size=7, caption=caption,
                comparisons=comparisons, processor=lambda panel: (panel[0], panel[1]), processor_column="gpu")


MEMCPY_CSV = ("host", "gpu", "node", "src_alloc", "src_mem", "src_at", "dst_alloc", "dst_mem", "dst_at", "size_bytes",
              "median_GBps", "min_GBps", "max_GBps", "placement", "dst_placement", "run")
