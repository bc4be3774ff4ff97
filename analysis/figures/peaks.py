"""Fig. 3: the theoretical peak of every processor x memory path of the node, as a table
(the link or memory that limits it and the source of that figure; assumptions marked, as
every "% of peak" built on them is) and drawn as the paper draws it, reads, writes and
copies between the memories (``theoretical_peaks_figure``)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm

from .. import outfiles
from ..model.peaks import ASSUMED_MARK, ASSUMED_NOTE, Peak, PeakModel
from ..model.roles import by_role, labelled, role
from ..render import style
from ..render.tables import markdown, num
from ..render.items import Context, Drawn, Grid, faceted, item
from ..results.cases import same_memory
from .paths import pu_title


@item("theoretical_peaks", "Fig. 3", "Theoretical peak of every path, with its source", "table",
      ("bw/cases", "chase/cases", "memcpy/cases", "gemm/cases", "um/cases", "stream/cases"),
      "mempath topo (any run carries the topology)", order=3)
def theoretical_peaks(ctx: Context) -> Drawn:
    rows = []
    for host, topology in ctx.topologies.items():
        model = ctx.models[host]
        for path in topology.get("paths", []):
            peak = model.path(path["pu"], path["mem"])
            parts = " + ".join(f"{c.name} {num(c.gbps, 0)}" if c.gbps else f"{c.name} unknown"
                               for c in model.capacities(path["pu"], path["mem"]))
            rows.append({"host": host, "processor": path["pu"],
                         "memory": labelled(topology, path["pu"], path["mem"]),
                         "via": path["via"],
                         "peak GB/s": (num(peak.gbps, 0) + (f" {ASSUMED_MARK}" if peak.assumed else ""))
                         if peak.gbps else "unknown",
                         "limited by": peak.limit or "", "capacities on the way (GB/s)": parts,
                         "source": peak.citation or (peak.source or "no figure")})
    frame = pd.DataFrame(rows, dtype=object)
    if frame.empty:
        return Drawn(why_not="the runs' topologies list no path")
    if len(ctx.topologies) == 1:
        frame = frame.drop(columns="host")
    csv = ctx.out / "theoretical_peaks.csv"
    outfiles.write_csv(frame, csv)
    notes = ["Peak of a path = the slowest link or memory on its way, one direction, decimal GB/s "
             "(docs/analysis.md, \"Theoretical peaks\")."]
    if frame["peak GB/s"].astype(str).str.contains(ASSUMED_MARK).any():
        notes.append(ASSUMED_NOTE)
    return Drawn(files=[csv], table=markdown(frame), notes=notes, runs=[r.name for r in ctx.runs.runs])


# ---------------------------------------------------------------- Fig. 3, drawn

COPY_RULE = ("Copy peak (source -> destination, buffer size / time, the copy figures' throughput): the lower "
             "of the source's read peak and the destination's write peak; where source and destination are "
             "one memory it is read and written at once, so that memory's own figure is halved (the paper's "
             "DDR-to-DDR 250 GB/s, sec. III-A). Links are full duplex: a copy that crosses a link twice "
             "crosses it once each way, at its per-direction figure.")


@dataclass(frozen=True)
class Cell:
    """One drawn peak: GB/s (None: unknown), what limits it, its citation, assumed or not,
    and whether some part on the way has no known figure (then it bounds the known parts)."""

    gbps: float | None
    limit: str
    citation: str
    assumed: bool
    partial: bool = False


def _known(gbps: float | None) -> float | None:
    """A peak's GB/s, None where the model has no figure (None or NaN: a GPU its tables lack)."""
    return gbps if gbps and math.isfinite(gbps) else None


def _cell(peak: Peak) -> Cell:
    return Cell(_known(peak.gbps), peak.limit or "", peak.citation or (peak.source or ""), peak.assumed,
                bool(peak.unknown))


def copy_peak(model: PeakModel, topology: Mapping[str, Any], pu: str, src: str, dst: str) -> Cell:
    """The peak of ``pu`` copying ``src`` to ``dst`` (COPY_RULE); None GB/s where no part is known."""
    read, write = model.path(pu, src), model.path(pu, dst)
    parts = [_cell(read), _cell(write)]
    if same_memory(topology, src, dst):
        memory = model.memory(src)
        if _known(memory.gbps):
            parts.append(Cell(memory.gbps / 2, f"{memory.name} read and written (half its figure)",
                              memory.citation or memory.source or "", memory.assumed))
    known = [c for c in parts if c.gbps]
    partial = any(c.partial or not c.gbps for c in parts)
    if not known:
        return Cell(None, "", "", False, partial)
    low = min(known, key=lambda c: c.gbps or 0.0)
    return Cell(low.gbps, low.limit, low.citation, low.assumed, partial)


def drawn_memories(topology: Mapping[str, Any], pu: str) -> list[str]:
    """The memories the figure draws for ``pu``: the first of each role it has a path to
    (the node is symmetric: one peer stands for all, as in the paper), a GPU's device memory
    left out where its HBM NUMA node is drawn (one memory, one set of peaks)."""
    reach = [p["mem"] for p in topology.get("paths", []) if p["pu"] == pu]
    chosen: dict[str, str] = {}
    for mem in by_role(topology, pu, reach):
        chosen.setdefault(role(topology, pu, mem) or mem, mem)
    mems = {m["name"]: m for m in topology.get("memories", [])}
    hbm_of = {mems[m].get("gpu") for m in chosen.values() if mems.get(m, {}).get("kind") == "hbm"}
    return [m for m in chosen.values()
            if not (mems.get(m, {}).get("kind") == "device" and mems[m].get("gpu") in hbm_of)]


def drawn_processors(topology: Mapping[str, Any]) -> list[str]:
    """The first CPU socket and the first GPU (the paper's Grace and Hopper of one superchip)."""
    procs = topology.get("processors", [])
    cpu = next((p["name"] for p in procs if p.get("kind") == "cpu" and p.get("numa") is not None), None)
    gpu = next((p["name"] for p in procs if p.get("kind") == "gpu"), None)
    return [p for p in (cpu, gpu) if p]


def _grid(model: PeakModel, topology: Mapping[str, Any], pu: str, mems: Sequence[str]
          ) -> list[list[Cell | None]]:
    """Rows: the memories; column 0: their read/write peak, then a copy to each memory (None: no path)."""
    reach = {p["mem"] for p in topology.get("paths", []) if p["pu"] == pu}
    rows = []
    for src in mems:
        row: list[Cell | None] = [_cell(model.path(pu, src)) if src in reach else None]
        row += [copy_peak(model, topology, pu, src, dst) if src in reach and dst in reach else None for dst in mems]
        rows.append(row)
    return rows


@item("theoretical_peaks_figure", "Fig. 3", "Theoretical peaks of reads, writes and copies of each memory, drawn",
      "figure", ("bw/cases", "chase/cases", "memcpy/cases", "gemm/cases", "um/cases", "stream/cases"),
      "mempath topo (any run carries the topology)", order=3.1)
def theoretical_peaks_figure(ctx: Context) -> Drawn:
    by_host = {host: [pu for pu in drawn_processors(topology) if drawn_memories(topology, pu)]
               for host, topology in ctx.topologies.items()}
    by_host = {host: pus for host, pus in by_host.items() if pus}
    panels = [(host, pu) for host, pus in by_host.items() for pu in pus]
    grids = {(h, p): (drawn_memories(ctx.topologies[h], p), _grid(ctx.models[h], ctx.topologies[h], p,
                                                                  drawn_memories(ctx.topologies[h], p)))
             for h, p in panels}
    cells = [c for _, grid in grids.values() for row in grid for c in row if c is not None]
    values = [c.gbps for c in cells if c.gbps]
    # One known value is a scale of no width (a masked norm): widen it around the value
    norm = LogNorm(vmin=min(values), vmax=max(max(values), 1.01 * min(values))) if values else LogNorm(1, 10)
    labels = {panel: [labelled(ctx.topologies[panel[0]], panel[1], m) for m in grids[panel][0]] for panel in panels}
    rows = [{"host": host, "processor": pu, "operation": "read or write" if j == 0 else "copy",
             "memory": labels[host, pu][i], "destination": "" if j == 0 else labels[host, pu][j - 1],
             "peak_GBps": c.gbps if c.gbps else math.nan, "limited_by": c.limit,
             "assumed": c.assumed, "unknown_parts": c.partial, "source": c.citation}
            for host, pu in panels for i, row in enumerate(grids[host, pu][1]) for j, c in enumerate(row)
            if c is not None]
    frame = pd.DataFrame(rows)

    def draw(ax: Axes, panel: tuple[str, str]) -> None:
        host, pu = panel
        topology = ctx.topologies[host]
        mems, grid = grids[panel]
        values_grid = np.array([[c.gbps if c is not None and c.gbps else np.nan for c in row] for row in grid],
                               dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values_grid), cmap="viridis", norm=norm, aspect="auto")
        ax.set_facecolor("0.88")
        for i, row in enumerate(grid):
            for j, c in enumerate(row):
                if c is None or not c.gbps:
                    ax.text(j, i, "–" if c is None else "?", ha="center", va="center", fontsize=7, color="black")
                    continue
                ax.text(j, i, f"{c.gbps:.0f}" + (ASSUMED_MARK if c.assumed else ""), ha="center", va="center",
                        fontsize=7, color=style.ink(image.cmap(image.norm(c.gbps))))
        ax.axvline(0.5, color="white", linewidth=2.0)
        ax.set_xticks(range(len(mems) + 1), ["read or write", *(f"copy to {role(topology, pu, m) or m}"
                                                                 for m in mems)], rotation=90)
        ax.set_yticks(range(len(mems)), labels[panel])
        ax.tick_params(length=0)
        ax.set_ylabel("memory (copy source)")

    def title(panel: tuple[str, str]) -> str:
        host, pu = panel
        return (f"{style.short_name(host)}\n" if ctx.many else "") + pu_title(ctx.topologies[host], pu) + "\npeak GB/s"

    most = max((len(grids[panel][0]) for panel in panels), default=0)
    notes = ["Each panel: one processor (the first CPU socket and the first GPU; the node is symmetric, one "
             "peer stands for all), each memory it reaches by its role. First column: the peak of reading or "
             "writing the memory, the slowest link or memory on the way, one direction, decimal GB/s "
             "(docs/analysis.md, \"Theoretical peaks\"); the other columns: copies from the row's memory to "
             "the column's. Colour: GB/s on a log scale, the number in each cell; –: no such path.",
             COPY_RULE,
             "theoretical_peaks.md lists every path of every processor with what limits it and its source; "
             "theoretical_peaks_figure.csv every drawn cell."]
    if any(not c.gbps for c in cells):
        notes.append("?: no figure is known for any part of the path.")
    if any(c.partial for c in cells if c.gbps):
        notes.append("Where a part of a path has no known figure (x86 socket memory, UPI), the peak bounds only "
                     "the known parts (unknown_parts in the CSV).")
    if any(c.assumed for c in cells if c.gbps):
        notes.append(f"{ASSUMED_MARK} an assumed figure limits the peak (no published source confirms it).")
    # A node is a row of the grid: one page holds the nodes it has rows for, the others go on pages of their own.
    return faceted(ctx, "theoretical_peaks_figure", frame,
                   "the runs' topologies list no processor with a path to a memory",
                   lambda _: Grid(panels, draw, title, style.PAGE_IN, 0.3 * most + 1.9 + (0.15 if ctx.many else 0.0),
                                  max_cols=2, legend=False, processor=lambda panel: panel,
                                  processor_column="processor"),
                   notes=notes, runs=[r.name for r in ctx.runs.runs if r.node in by_host],
                   csv=(frame, [c for c in frame.columns if c != "host" or ctx.many]))
