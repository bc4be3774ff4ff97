"""The paper's scale-out figures (Sec. III-F and IV-C).

- ``mpi_bandwidth`` (Fig. 14): node-to-node MPI bandwidth against the node's bytes, one
  line per processes-per-node count, uni- and bidirectional; the node's data split among
  its processes (``mempath-mpi bw --split``), buffers in each process's local DDR/LPDDR.
- ``nccl_by_size`` (Fig. 18): NCCL all-reduce and all-gather against the buffer size on
  one node, one line per buffer placement named by its memory role; bandwidth as the paper
  defines it (buffer size / time = nccl-tests' algbw) and nccl-tests' busbw below it.
- ``nccl_by_nodes`` (Fig. 19): the same against the node count at the paper's sizes
  (all-reduce 4 GB, all-gather 16 MB per process), 4 processes per node.

Several runs of one configuration (repeated jobs, or one job per processes-per-node or
node count, as a paper set has them) are pooled: a point is the median over the runs."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from ..render.figures import bytes_axis
from ..render.style import COLUMN_IN, PAGE_IN, from_zero, log_axis, series
from ..model.roles import labelled, role
from ..results.transfers import size_label
from ..render.items import Comparison, Context, Drawn, Grid, faceted, item, mark
from .published import DEF_NETWORK, Published, hold, of, run_facts

# ---- shared ---------------------------------------------------------------------------------


def _ok(cases: pd.DataFrame, value: str) -> pd.DataFrame:
    """Cases that ran and have a finite ``value``."""
    if cases.empty or "status" not in cases or value not in cases:
        return cases.iloc[:0]
    values = pd.to_numeric(cases[value], errors="coerce")
    return cases[(cases["status"] == "ok") & np.isfinite(values) & (values > 0)]


def _int(frame: pd.DataFrame, name: str, default: int = -1) -> pd.Series:
    """An integer column, ``default`` where the file lacks it or a cell is missing."""
    if name not in frame:
        return pd.Series(default, index=frame.index, dtype="int64")
    return pd.to_numeric(frame[name], errors="coerce").fillna(default).astype("int64")


def _line(ax: Axes, x: Sequence[float], y: Sequence[float], index: int, label: str,
          names: tuple[str, str], **more: Any) -> None:
    """One series in the style's colour, marker and line style; markers thinned on long
    sweeps so they stay apart; its points recorded as marks (``names``: x's and y's column)."""
    ax.plot(x, y, label=label, markevery=max(1, len(x) // 8), **series(index))
    mark(ax, label, **{names[0]: list(x), names[1]: list(y)}, **more)


def _published(key: str) -> Published:
    found = [p for p in of(key) if p.key == key]
    if not found:
        raise KeyError(f"no published value {key!r} in analysis/figures/published.py")
    return found[0]


def _median(values: pd.Series) -> float:
    return float(np.median(pd.to_numeric(values, errors="coerce").astype(float)))


def _skipped(cases: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """'KEY...: reason' for every configuration that never ran (skipped or failed only)."""
    if cases.empty or "status" not in cases:
        return []
    out = []
    for key, group in cases.groupby(list(keys), sort=False):
        if (group["status"] == "ok").any():
            continue
        reasons = sorted(set(group["reason"].fillna("").replace("", "no reason given"))) \
            if "reason" in group else ["no reason given"]
        key = key if isinstance(key, tuple) else (key,)
        out.append(f"{' '.join(map(str, key))} {group['status'].iloc[0]}: {'; '.join(reasons)}")
    return out


# ---- Fig. 14: MPI node-to-node bandwidth --------------------------------------------------

MPI_COMMAND = ("srun -N 2 --ntasks-per-node=P mempath-mpi bw --split --mode uni,bi --alloc numa "
               "(P = 1, 2, 4)")
#: Allocators whose buffers are in each process's own NUMA node (the paper's "local DDR"),
#: in the order one is chosen where a run has several.
LOCAL_HOST_ALLOCS = ("numa", "system", "pinned")
MODES = {"uni": ("unidirectional", "GB/s (node 0 \u2192 1)"),
         "bi": ("bidirectional", "GB/s (both ways)")}


def _node_memory(ctx: Context, rows: pd.DataFrame) -> str:
    """The buffers' memory role seen from the processes of node 0: 'local LPDDR (numa0-3)'."""
    host = rows["host"].iloc[0]
    topology = ctx.topologies.get(host, {})
    ranks = ctx.table("mpi_bw/ranks")
    numas: list[int] = []
    if not ranks.empty and {"run", "node", "numa"} <= set(ranks.columns):
        mine = ranks[ranks["run"].isin(set(rows["run"])) & (_int(ranks, "node") == 0)]
        numas = sorted({int(n) for n in _int(mine, "numa") if n >= 0})
    cpus = {p.get("numa"): p["name"] for p in topology.get("processors", [])
            if p.get("kind") == "cpu" and p.get("numa") is not None}
    words = {role(topology, cpus[n], f"numa{n}") for n in numas if n in cpus} - {""}
    if not words:  # no ranks table: a process's own node, as the binary binds it
        first = next(iter(sorted(cpus)), None)
        words = {role(topology, cpus[first], f"numa{first}")} - {""} if first is not None else set()
    word = " / ".join(sorted(words)) or "each process's own NUMA node"
    where = (f"numa{numas[0]}" if len(numas) == 1 else f"numa{numas[0]}-{numas[-1]}") if numas else ""
    return f"{word} ({where})" if where else word


def _mpi_points(cases: pd.DataFrame) -> pd.DataFrame:
    """One point per (mode, ppn, node bytes): the median over runs of the cases' medians."""
    frame = cases.assign(
        node_bytes=np.where(_int(cases, "node_bytes") > 0, _int(cases, "node_bytes"),
                            _int(cases, "size_bytes") * _int(cases, "pairs", 1).clip(lower=1)),
        ppn=_int(cases, "ppn"), gbps=pd.to_numeric(cases["median_GBps"], errors="coerce"))
    return (frame.groupby(["mode", "ppn", "node_bytes"], as_index=False)
            .agg(gbps=("gbps", "median"), runs=("run", "nunique")).sort_values(["mode", "ppn", "node_bytes"]))


def _mpi_comparisons(points: pd.DataFrame, where: str, topology: Mapping[str, Any]) -> list[Comparison]:
    """Fig. 14's published figures beside this run's; ``topology``: node 0's. The run does
    not record its network, so the link is never shown to match (context, not comparison)."""
    cpu = next((p["name"] for p in topology.get("processors", []) if p.get("kind") == "cpu"), "")
    # (published key, mode, processes per node, this run's words, GB/s -> the published unit)
    held = (("fig14.bi.node_max", "bi", 4, "bidirectional, 4 processes per node, {size} per node in {where}", 1),
            ("fig14.uni.port", "uni", 1, "unidirectional, 1 process per node, {size} in {where} (GB/s x 8)", 8))
    out = []
    for key, mode, ppn, words, scale in held:
        mine = points[(points["mode"] == mode) & (points["ppn"] == ppn)]
        if mine.empty:
            continue
        p = _published(key)
        top = mine[mine["node_bytes"] == mine["node_bytes"].max()].iloc[0]
        facts = run_facts(topology, cpu, definition=DEF_NETWORK, link="network not recorded by the run",
                          direction="sum of both directions" if mode == "bi" else "one direction")
        out.append(hold("mpi_bandwidth", p, float(top["gbps"]) * scale, f"{p.quantity}; this run: "
                        + words.format(size=size_label(top["node_bytes"]), where=where), facts))
    return out


@item("mpi_bandwidth", "Fig. 14", "MPI node-to-node bandwidth against the node's bytes, per processes per node",
      "figure", ("mpi_bw/cases",), MPI_COMMAND, order=14)
def mpi_bandwidth(ctx: Context) -> Drawn:
    cases = ctx.table("mpi_bw/cases")
    ran = _ok(cases, "median_GBps")
    if ran.empty:
        return Drawn(why_not=f"no /mpi_bw/cases case ran (status ok); measured by `{MPI_COMMAND}`")
    left_out = []
    same = _int(ran, "same_host", 0) == 1
    if same.all():
        return Drawn(why_not="every /mpi_bw case ran between two halves of one host (same_host=1: "
                             "shared memory, not the network); node to node needs two nodes: "
                             f"`{MPI_COMMAND}`")
    if same.any():
        left_out.append(f"{int(same.sum())} same-host cases (two halves of one host, not the network)")
    net = ran[~same]
    mem = net["mem"].fillna("") if "mem" in net else pd.Series("numa", index=net.index)
    allocs = [a for a in LOCAL_HOST_ALLOCS if ((net["alloc"] == a) & (mem != "gpu")).any()]
    if not allocs:
        found = ", ".join(sorted(set(net["alloc"].astype(str))))
        return Drawn(why_not=f"no /mpi_bw case with buffers in the processes' local DDR (alloc "
                             f"{', '.join(LOCAL_HOST_ALLOCS)}; this run has {found}): "
                             f"`{MPI_COMMAND}`")
    alloc = allocs[0]
    drawn = net[(net["alloc"] == alloc) & (mem != "gpu")]
    why = {"device": "GPU memory", "managed": "pages with no recorded placement"}
    others = [f"{a} ({why.get(a, 'local DDR too; the paper found the allocations alike')})"
              for a in sorted(set(net["alloc"].astype(str)) - {alloc})]
    if others:
        left_out.append(f"allocators {', '.join(others)}: the paper shows one, local DDR")
    points = _mpi_points(drawn)
    where = _node_memory(ctx, drawn)
    modes = [m for m in MODES if m in set(points["mode"])]
    ppns = sorted(set(points["ppn"]))

    def draw(ax: Axes, mode: str) -> None:
        part = points[points["mode"] == mode]
        for ppn in ppns:
            line = part[part["ppn"] == ppn]
            if line.empty:
                continue
            _line(ax, line["node_bytes"].tolist(), line["gbps"].tolist(), ppns.index(ppn),
                  f"{ppn} process{'es' if ppn != 1 else ''} per node", ("node_bytes", "GBps"), mode=mode)
        bytes_axis(ax, sorted(set(part["node_bytes"])))
        ax.set(xlabel="bytes per node, split\namong its processes", ylabel=MODES[mode][1])
        ax.grid(True)
        from_zero(ax)

    split = _int(drawn, "split", -1)
    notes = [
        "Bandwidth = the node's bytes moved / time (uni: node 0's sends; bi: both directions "
        "summed); time from the start node 0's first process chose to the end of its last "
        "(docs/schema.md, /mpi_bw). Median of the repetitions; of the runs where several "
        "measured a point.",
        f"x: the node's bytes, split equally among its processes (each sends bytes / processes); "
        f"buffers allocated with `{alloc}` in {where}, each process bound to its own NUMA node.",
    ]
    if (split == 0).any() or (split < 0).any():
        notes.append("Runs without --split (each process sent the size): drawn at the node's bytes = "
                     "message x pairs, the same transfer.")
    notes += _one_machine(ctx, drawn)
    return faceted(ctx, "mpi_bandwidth", drawn, "", lambda _: Grid(
        modes, draw, lambda mode: MODES[mode][0], COLUMN_IN, 1.9, legend_title=f"buffers in {where}, {alloc}"),
        notes, why_not="; ".join(left_out + _skipped(cases[cases["alloc"] == alloc], ("mode", "ppn"))),
        comparisons=_mpi_comparisons(points, where, ctx.topologies.get(str(drawn["host"].iloc[0]), {})
                                     if "host" in drawn else {}))


def _one_machine(ctx: Context, drawn: pd.DataFrame) -> list[str]:
    """The caption's word on runs whose ranks' nodes share one machine (``mpi_nodes`` >= 2,
    ``mpi_machines`` 1: one kernel boot id) or whose ranks share GPUs (``mpi_gpus`` below
    ``mpi_ranks``: a test cluster's nodes given one GPU each): a functional figure, not a
    network's bandwidth."""
    used = set(drawn["run"])
    notes = []
    for run in ctx.runs.runs:
        if run.name not in used:
            continue
        attr = lambda name: int(run.attrs.get(name, 0) or 0)  # noqa: E731
        nodes, machines, gpus, ranks = attr("mpi_nodes"), attr("mpi_machines"), attr("mpi_gpus"), attr("mpi_ranks")
        shared = f", {ranks} ranks sharing {gpus} GPU{'s' if gpus != 1 else ''}" if 0 < gpus < ranks else ""
        if nodes >= 2 and machines == 1:
            notes.append(f"{run.name}: ranks on {nodes} nodes of one machine (one kernel boot id){shared}: "
                         "functional, not a network's bandwidth.")
        elif shared:
            notes.append(f"{run.name}: {shared[2:]}: functional, not the GPUs' bandwidth.")
    return notes


# ---- Figs. 18 and 19: NCCL collectives under placement ----------------------------------------

#: Placements in the order the figures list them (mempath-mpi nccl --placement).
PLACEMENTS = ("device", "hbm-system", "host", "peer", "peer-host")
COLLECTIVES = {"allreduce": "all-reduce", "allgather": "all-gather"}
ALLOC_WORDS = {"device": "cudaMalloc", "pinned": "cudaMallocHost", "numa": "system-allocated",
               "system": "system-allocated", "registered": "cudaHostRegister"}
BUSBW = {"allreduce": "algbw \u00d7 2(n\u22121)/n", "allgather": "algbw \u00d7 (n\u22121)/n"}
XLABEL = {"allreduce": "buffer (bytes)", "allgather": "gathered buffer (bytes)"}
#: Fig. 19's sizes (Sec. IV-C): "4 GB" all-reduce, "16 MB times the number of processes"
#: all-gather; mempath-mpi nccl --paper-sizes takes them as GiB and MiB.
PAPER_ALLREDUCE_BYTES = 4 << 30
PAPER_ALLGATHER_RANK_BYTES = 16 << 20
PLACEMENT_LIST = ",".join(PLACEMENTS)
BY_SIZE_COMMAND = (f"srun -N 1 --ntasks-per-node=4 mempath-mpi nccl --placement {PLACEMENT_LIST} "
                   "--max-size 4GiB")
BY_NODES_COMMAND = (f"srun -N N --ntasks-per-node=4 mempath-mpi nccl --paper-sizes --placement "
                    f"{PLACEMENT_LIST} (N = 1, 2, 4, 8)")


def _placement_mem(topology: Mapping[str, Any], placement: str, gpu: int = 0) -> str:
    """Rank 0's buffer memory of ``placement`` for files that lack the ``mem`` column, as
    mempath-mpi nccl places it (src/core/scaleout_plan.cpp, nccl_placement)."""
    gpus = [p for p in topology.get("processors", []) if p.get("kind") == "gpu"]
    own = next((p for p in gpus if p.get("gpu") == gpu), None)
    if own is None:
        return ""
    if placement == "device":
        return f"gpu{gpu}"
    if placement == "hbm-system":
        return f"numa{own['hbm_numa']}" if own.get("hbm_numa") is not None else ""
    if placement == "host":
        return f"numa{own.get('host_numa') or 0}"
    if placement == "peer" and len(gpus) > 1:
        return f"gpu{gpus[(gpus.index(own) + 1) % len(gpus)]['gpu']}"
    if placement == "peer-host":
        for k in range(1, len(gpus)):
            other = gpus[(gpus.index(own) + k) % len(gpus)]
            if other.get("host_numa") is not None and other.get("host_numa") != own.get("host_numa"):
                return f"numa{other['host_numa']}"
    return ""


def _placement_label(topology: Mapping[str, Any], mem: str, alloc: str) -> str:
    """'local HBM (numa4), cudaMalloc': the memory's role seen from rank 0's GPU (gpu0);
    a GPU's memory that is also a NUMA node (GH200's HBM) is named by that node."""
    memories = {m["name"]: m for m in topology.get("memories", [])}
    m = memories.get(mem, {})
    if m.get("kind") == "device" and m.get("numa") is not None:
        mem = f"numa{m['numa']}"
    return f"{labelled(topology, 'gpu0', mem) if mem else 'unknown memory'}, {ALLOC_WORDS.get(alloc, alloc)}"


def _nccl_cases(ctx: Context) -> pd.DataFrame:
    """/nccl/cases that ran, with rank_bytes, mem (rank 0's) and a legend label per placement."""
    ran = _ok(ctx.table("nccl/cases"), "algbw_GBps")
    if ran.empty:
        return ran
    ranks = _int(ran, "ranks", 1).clip(lower=1)
    size = _int(ran, "size_bytes")
    derived = np.where(ran["collective"] == "allgather", size // ranks, size)
    rank_bytes = np.where(_int(ran, "rank_bytes") > 0, _int(ran, "rank_bytes"), derived)
    mems = [str(m) if isinstance(m, str) and m else _placement_mem(ctx.topologies.get(h, {}), p)
            for m, h, p in zip(ran["mem"] if "mem" in ran else [""] * len(ran), ran["host"], ran["placement"])]
    labels = [_placement_label(ctx.topologies.get(h, {}), m, a)
              for m, h, a in zip(mems, ran["host"], ran["alloc"].fillna(""))]
    return ran.assign(rank_bytes=rank_bytes, mem=mems, label=labels, ranks=ranks, nodes=_int(ran, "nodes", 1),
                      algbw=pd.to_numeric(ran["algbw_GBps"], errors="coerce"),
                      busbw=pd.to_numeric(ran["busbw_GBps"], errors="coerce"))


def _order(placements: Sequence[str]) -> list[str]:
    return sorted(set(placements), key=lambda p: (PLACEMENTS.index(p) if p in PLACEMENTS else len(PLACEMENTS), p))


def _nccl_grid(points: pd.DataFrame, x: str, colls: Sequence[str], xaxis, log_y: bool = False,
               ) -> Callable[[pd.DataFrame], Grid]:
    """Two rows (algbw, busbw) x one column per collective; one line per placement; a log
    y axis where ``log_y`` (stated on the axis)."""
    placements = _order(points["placement"])
    rows = (("algbw", "algbw (GB/s)\n= buffer / time"), ("busbw", "busbw (GB/s)\n= {busbw}"))

    def draw(ax: Axes, panel: tuple[int, str]) -> None:
        row, coll = panel
        value, ylabel = rows[row]
        part = points[points["collective"] == coll]
        for placement in placements:
            line = part[part["placement"] == placement].sort_values(x)
            if line.empty:
                continue
            _line(ax, line[x].tolist(), line[value].tolist(),
                  PLACEMENTS.index(placement) if placement in PLACEMENTS else len(PLACEMENTS),
                  line["label"].iloc[0], (x, "GBps"), collective=coll, bandwidth=value)
        xaxis(ax, part, coll)
        ax.grid(True)
        ylabel = ylabel.format(busbw=BUSBW.get(coll, "busbw"))
        if log_y:  # plain labels, and few where a panel spans less than a decade
            log_axis(ax, "y")
            ylabel = ylabel.replace("(GB/s)", "(GB/s, log)")
        else:
            from_zero(ax)
        ax.set_ylabel(ylabel)

    def title(panel: tuple[int, str]) -> str:
        part = points[points["collective"] == panel[1]]
        if panel[0]:
            return ""
        return part["title"].iloc[0] if "title" in part and not part.empty else COLLECTIVES[panel[1]]

    return lambda _: Grid([(row, coll) for row in range(2) for coll in colls], draw, title, PAGE_IN, 1.75,
                          max_cols=len(colls), legend_title="each process's buffers in (memory roles seen from gpu0)")


def _definitions(n: str) -> list[str]:
    return [
        "Bandwidth as the paper defines it: the buffer's size / the time of one collective "
        "(nccl-tests' algbw; the all-reduce buffer, the gathered all-gather buffer); busbw = "
        "algbw x 2(n-1)/n for all-reduce and x (n-1)/n for all-gather, n the processes "
        f"(nccl-tests' PERFORMANCE.md; {n}). Time: the slowest rank's CUDA-event "
        "time, mean over the timed iterations; several runs of a point: their median.",
        "Placements: each process's buffers in the memory named, seen from rank 0 (gpu0); rank r's "
        "are the same role seen from its own GPU.",
    ]


def _same_performance_note(points: pd.DataFrame) -> list[str]:
    """The paper: system-allocated HBM and cudaMalloc "showed the same performance"."""
    notes = []
    for coll, name in COLLECTIVES.items():
        part = points[points["collective"] == coll]
        dev, sys_ = part[part["placement"] == "device"], part[part["placement"] == "hbm-system"]
        common = sorted(set(dev["size_bytes"]) & set(sys_["size_bytes"]))
        if common:
            size = common[-1]
            ratio = float(sys_[sys_["size_bytes"] == size]["algbw"].iloc[0]) / \
                float(dev[dev["size_bytes"] == size]["algbw"].iloc[0])
            notes.append(f"{name} at {size_label(size)}: system-allocated HBM / cudaMalloc = {ratio:.2f} "
                         "(the paper found them the same).")
    return notes


@item("nccl_by_size", "Fig. 18", "NCCL all-reduce and all-gather against the buffer size, per buffer placement",
      "figure", ("nccl/cases",), BY_SIZE_COMMAND, order=18)
def nccl_by_size(ctx: Context) -> Drawn:
    cases = _nccl_cases(ctx)
    # The paper: the processes of one node. The fewest nodes with a size sweep (a
    # collective at two sizes or more), the most processes there.
    chosen = None
    for nodes in sorted(set(cases["nodes"])) if not cases.empty else []:
        one = cases[cases["nodes"] == nodes]
        ranks = int(one["ranks"].max())
        one = one[one["ranks"] == ranks]
        swept = [c for c in COLLECTIVES if one.loc[one["collective"] == c, "size_bytes"].nunique() >= 2]
        if swept:
            chosen = (nodes, ranks, one[one["collective"].isin(swept)], swept)
            break
    if chosen is None:
        return Drawn(why_not=f"no /nccl/cases case ran (status ok); measured by `{BY_SIZE_COMMAND}`" if cases.empty
                     else "no collective at two sizes or more in /nccl/cases (one size per node count: "
                     f"--paper-sizes runs); the figure needs a sweep: `{BY_SIZE_COMMAND}`")
    nodes, ranks, one, colls = chosen
    points = (one.groupby(["collective", "placement", "size_bytes"], as_index=False)
              .agg(algbw=("algbw", "median"), busbw=("busbw", "median"), label=("label", "first")))
    points["title"] = [f"{COLLECTIVES[c]}, n = {ranks} GPUs on {nodes} node{'s' if nodes != 1 else ''}"
                       for c in points["collective"]]

    def xaxis(ax: Axes, part: pd.DataFrame, coll: str) -> None:
        bytes_axis(ax, sorted(set(part["size_bytes"])))
        ax.set_xlabel(XLABEL[coll])

    notes = _definitions(f"n = {ranks} here") + _same_performance_note(points) + _one_machine(ctx, one)
    if nodes != 1:
        notes.append(f"No single-node sweep: drawn from the fewest nodes with one ({nodes}).")
    return faceted(ctx, "nccl_by_size", one, "", _nccl_grid(points, "size_bytes", colls, xaxis), notes,
                   why_not="; ".join(_skipped(ctx.table("nccl/cases"), ("placement",))))


def _at_size(part: pd.DataFrame, key: str, wanted: int, node_counts: Sequence[int]) -> tuple[pd.DataFrame, int]:
    """The rows at ``key`` == wanted, else at the largest value every node count has."""
    if set(part.loc[part[key] == wanted, "nodes"]) >= set(node_counts):
        return part[part[key] == wanted], wanted
    common = set.intersection(*(set(part.loc[part["nodes"] == n, key]) for n in node_counts))
    if not common:
        return part.iloc[:0], 0
    size = max(common)
    return part[part[key] == size], size


@item("nccl_by_nodes", "Fig. 19", "NCCL all-reduce and all-gather against the node count, per buffer placement",
      "figure", ("nccl/cases",), BY_NODES_COMMAND, order=19)
def nccl_by_nodes(ctx: Context) -> Drawn:
    cases = _nccl_cases(ctx)
    if cases.empty:
        return Drawn(why_not=f"no /nccl/cases case ran (status ok); measured by `{BY_NODES_COMMAND}`")
    per_node = cases["ranks"] // cases["nodes"].clip(lower=1)
    exact = cases["ranks"] == per_node * cases["nodes"]
    wanted = 4 if ((per_node == 4) & exact).any() else int(per_node[exact].mode().max()) if exact.any() else 0
    cases = cases[(per_node == wanted) & exact]
    node_counts = sorted(set(cases["nodes"]))
    if len(node_counts) < 2:
        held = f"only runs on {node_counts[0]} node{'s' if node_counts[0] != 1 else ''}" if node_counts \
            else "no run whose processes split evenly over its nodes"
        return Drawn(why_not=f"/nccl/cases holds {held} ({wanted} process{'es' if wanted != 1 else ''} per "
                             f"node); the figure needs several node counts: `{BY_NODES_COMMAND}`")
    notes, chosen = [], []
    for coll, key, paper in (("allreduce", "size_bytes", PAPER_ALLREDUCE_BYTES),
                             ("allgather", "rank_bytes", PAPER_ALLGATHER_RANK_BYTES)):
        part, size = _at_size(cases[cases["collective"] == coll], key, paper, node_counts)
        if part.empty:
            notes.append(f"{COLLECTIVES[coll]}: no size measured at every node count ({', '.join(map(str, node_counts))}).")
            continue
        what = "buffer" if coll == "allreduce" else "per process (gathered: that x processes)"
        if size != paper:
            notes.append(f"{COLLECTIVES[coll]}: the paper's {size_label(paper)} {what} was not measured at "
                         f"every node count; drawn at {size_label(size)}.")
        chosen.append(part.assign(title=f"{COLLECTIVES[coll]}, {size_label(size)} {what.split(' (')[0]}"))
    if not chosen:
        return Drawn(why_not=f"no NCCL size measured at every node count: `{BY_NODES_COMMAND}`")
    drawn = pd.concat(chosen)
    points = (drawn.groupby(["collective", "placement", "nodes"], as_index=False)
              .agg(algbw=("algbw", "median"), busbw=("busbw", "median"), label=("label", "first"),
                   title=("title", "first"), size_bytes=("size_bytes", "first")))
    colls = [c for c in COLLECTIVES if c in set(points["collective"])]

    def xaxis(ax: Axes, part: pd.DataFrame, coll: str) -> None:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(node_counts))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.set_xlabel(f"nodes ({wanted} process{'es' if wanted != 1 else ''} each)")

    values = points[["algbw", "busbw"]].to_numpy(dtype=float)
    log_y = bool(values.max() > 10 * values.min())
    notes = _definitions(f"n = {wanted} x nodes") + [
        f"Sizes as the paper's: all-reduce {size_label(PAPER_ALLREDUCE_BYTES)}, all-gather "
        f"{size_label(PAPER_ALLGATHER_RANK_BYTES)} per process (Sec. IV-C: \"4 GB\", \"16 MB times "
        "the number of processes\")."] + notes
    if log_y:
        notes.append("Log y axis: the values span more than 10x (one node's NVLink against the "
                     "network between nodes).")
    if wanted != 4:
        notes.append(f"No run with the paper's 4 processes per node: drawn at {wanted}.")
    notes += _one_machine(ctx, drawn)
    return faceted(ctx, "nccl_by_nodes", drawn, "", _nccl_grid(points, "nodes", colls, xaxis, log_y), notes,
                   why_not="; ".join(_skipped(ctx.table("nccl/cases"), ("placement",))))
