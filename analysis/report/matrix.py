"""The path matrix: processors x memories, median GB/s of each path's best case.

One entry per (host, op, pu, mem) for read and write: the best full-width case
(analysis.results.cases.best) with its % of the path's theoretical peak (analysis.model.peaks), or the
status and reasons when no case ran. Copy is left to the copy heatmap: its bytes are
read + written over two paths, so a single-path peak does not bound it. The same entries
are drawn as the report's "Path matrix heatmap" section (its item, heatmap()).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..results.cases import SEP, best, ordered, rank, unmeasured
from ..render.figures import Heat, colour_only, heat_cells, heat_grid
from ..render.mdtext import code, safe
from ..model.vocabulary import kind_word
from ..model.peaks import ASSUMED_MARK, ASSUMED_NOTE, PeakModel, pct_text
from ..render.items import Context, Drawn, faceted, item
from .sections import Part
from ..render import tables

MATRIX_OPS = ("read", "write")
ENTRY_COLUMNS = ["host", "op", "pu", "mem", "status", "median_GBps", "min_GBps", "max_GBps",
                 "pct_of_peak", "peak_GBps", "peak_source", "peak_limit", "peak_unknown",
                 "peak_citation", "peak_assumed", "via", "alloc", "kernel", "threads", "size_bytes", "run", "case_id", "reason"]
KEYS = ["host", "op", "pu", "mem"]


Order = Mapping[str, tuple[list[str], list[str]]]  # host -> topology's processors, memories


def _sorted(table: pd.DataFrame, order: Order) -> pd.DataFrame:
    """Hosts in the order of ``order``, then op, then processors and memories as listed."""
    hosts = list(order)

    def key(row: Any) -> tuple[object, ...]:
        pus, mems = order.get(row.host, ([], []))
        return (rank(hosts, row.host), MATRIX_OPS.index(row.op), rank(pus, row.pu),
                rank(mems, row.mem))

    keys = [key(row) for row in table.itertuples()]
    return table.iloc[sorted(range(len(table)), key=keys.__getitem__)].reset_index(drop=True)


def entries(cases: pd.DataFrame, models: Mapping[str, PeakModel], order: Order) -> pd.DataFrame:
    """One row per (host, op, pu, mem) of read and write cases, columns ENTRY_COLUMNS."""
    cases = cases[cases["op"].isin(MATRIX_OPS)]
    if cases.empty:
        return pd.DataFrame(columns=ENTRY_COLUMNS)
    ran = best(cases, KEYS).set_index(KEYS)
    rows: list[dict[str, object]] = []
    for key, group in cases.groupby(KEYS, sort=False):
        host, op, pu, mem = key
        row: dict[str, object] = dict(zip(KEYS, key))
        via = str(group["via"].iloc[0])
        peak = models[host].path(pu, mem, via or None)
        row.update(via=via, peak_GBps=peak.gbps, peak_source=peak.source, peak_limit=peak.limit,
                   peak_unknown=", ".join(peak.unknown), peak_citation=peak.citation or "",
                   peak_assumed=peak.assumed)
        if key in ran.index:
            case = ran.loc[key]
            row.update(status="ok", **{c: case[c] for c in (
                "median_GBps", "min_GBps", "max_GBps", "alloc", "kernel", "threads",
                "size_bytes", "run", "case_id")})
            row["pct_of_peak"] = 100 * case["median_GBps"] / peak.gbps if peak.gbps else np.nan
            row["reason"] = ""
        else:
            row["status"], row["reason"] = unmeasured(group)
        rows.append(row)
    return _sorted(pd.DataFrame(rows).reindex(columns=ENTRY_COLUMNS), order)


def _pct(entry: pd.Series) -> str:
    return pct_text(entry["pct_of_peak"], bool(entry["peak_assumed"]))


def _cell(entry: pd.Series, note: dict[str, int]) -> str:
    if entry["status"] == "ok":
        text = f"{entry['median_GBps']:.1f}"
        return text + (f" ({_pct(entry)})" if pd.notna(entry["pct_of_peak"]) else "")
    marks = [note.setdefault(reason, len(note) + 1) for reason in str(entry["reason"]).split(SEP)]
    return f"{entry['status']} [{','.join(map(str, marks))}]"


def markdown(table: pd.DataFrame, order: Order) -> str:
    """Markdown of entries(): per host, one table per op and a numbered list of reasons.

    ``order`` maps a host to the topology's processor and memory names (row/column order).
    """
    lines = ["# Path matrix", "",
             "Median GB/s of the best case per processor (row) and memory (column): the "
             "largest CPU thread count, the GPU `grid` kernel, the best allocator; in "
             "brackets the % of the path's theoretical peak (summary.md lists the peaks). "
             "Cases under contention, in cache or with their pages elsewhere do not count "
             "(docs/analysis.md). Copy is in the copy heatmap (GB/s only).", ""]
    if table.empty:
        return "\n".join(lines + ["_No read or write case in these runs._", ""])
    for host in ordered(table["host"], list(order)):
        rows = table[table["host"] == host]
        pus, mems = order.get(host, ([], []))
        note: dict[str, int] = {}
        lines += [f"## Host {code(host)}", ""]
        for op in MATRIX_OPS:
            part = rows[rows["op"] == op]
            lines += [f"### {op}", ""]
            if part.empty:
                lines += [f"_No {op} case in these runs._", ""]
                continue
            found = {(e["pu"], e["mem"]): e for _, e in part.iterrows()}
            columns = ordered(part["mem"], mems)
            grid = [[pu, *[_cell(found[pu, m], note) if (pu, m) in found else "" for m in columns]]
                    for pu in ordered(part["pu"], pus)]  # reasons numbered in reading order
            lines += tables.markdown(["PU \\ memory", *columns], grid, right=range(1, len(columns) + 1))
        if note:
            lines += ["Reasons:", ""] + [f"{n}. {safe(reason)}" for reason, n in note.items()] + [""]
        if (rows["status"].eq("ok") & rows["pct_of_peak"].notna() & rows["peak_assumed"].eq(True)).any():
            lines += [ASSUMED_NOTE, ""]
    return "\n".join(lines)


HEATMAP = "path_heatmap"


def topology_order(topologies: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[list[str], list[str]]]:
    """host -> the topology's processor and memory names: the rows and columns."""
    return {host: ([p["name"] for p in t.get("processors", [])], [m["name"] for m in t.get("memories", [])])
            for host, t in topologies.items()}


def _heat_text(entry: pd.Series) -> str:
    if entry["status"] != "ok":
        return str(entry["status"])
    value = float(entry["median_GBps"])
    text = f"{value:.0f}" if value >= 100 else f"{value:.1f}"
    return text + (f"\n{_pct(entry)}" if pd.notna(entry["pct_of_peak"]) else "")


@item(HEATMAP, "", "Processor x memory, read and write", "figure", (), "", order=5.1)
def heatmap(ctx: Context) -> Drawn:
    """The path matrix's entries as a figure: one panel per host and op, processors x
    memories (each named with its kind: ``numa4 HBM``), cells coloured by median GB/s on
    one scale and annotated with it and the % of the path's peak (where a peak is known) or
    with why the path did not run; too many cells for 7 pt text: colours alone
    (render.figures.heat_grid), the numbers in path_matrix.md."""
    table = ctx.entries if ctx.entries is not None else pd.DataFrame(columns=ENTRY_COLUMNS)
    if table.empty or not (table["status"] == "ok").any():
        return Drawn(why_not="no read or write case measured a path")
    order = topology_order(ctx.topologies)
    panels = [(host, op) for host in ordered(table["host"], list(order)) for op in MATRIX_OPS
              if ((table["host"] == host) & (table["op"] == op)).any()]
    heats = []
    for host, op in panels:
        part = table[(table["host"] == host) & (table["op"] == op)]
        pus_order, mems_order = order.get(host, ([], []))
        pus, mems = ordered(part["pu"], pus_order), ordered(part["mem"], mems_order)
        grid = np.full((len(pus), len(mems)), np.nan)
        text = [[""] * len(mems) for _ in pus]
        for _, entry in part.iterrows():
            i, j = pus.index(entry["pu"]), mems.index(entry["mem"])
            text[i][j] = _heat_text(entry)
            if entry["status"] == "ok":
                grid[i, j] = float(entry["median_GBps"])
        marked = any(t.endswith(ASSUMED_MARK) for row in text for t in row)
        shares = part["pct_of_peak"].notna().any()  # no peak known: the title promises none
        title = f"{op}: median GB/s" + (" (% of peak" + (f"; {ASSUMED_MARK} assumed peak)" if marked else ")")
                                        if shares else "")
        kinds = ctx.topologies.get(host, {})
        heats.append(Heat(f"{host}: {title}" if ctx.many else title, grid, text, pus,
                          [f"{m} {kind_word(kinds, m)}".strip() if kinds else m for m in mems]))
    layout, annotated = heat_grid(heats, "GB/s (median)", "memory", "processor")
    cells = heat_cells(heats, "median_GBps")
    note = colour_only(heats, annotated, "[path_matrix.md](path_matrix.md) the numbers")
    return faceted(ctx, HEATMAP, cells, "", lambda _: layout, notes=[note] if note else [],
                   csv=(cells, list(cells.columns)))


@item("path_matrix_heatmap", "", "Path matrix heatmap", "section", ("bw/cases",), "", order=5)
def _heatmap_section(ctx: Context) -> Part:
    part = Part()
    if ctx.entries.empty:
        return part  # the report's Missing list already says the path matrix is empty
    part.add_item(ctx, HEATMAP)
    return part
