"""The transfer part of the report: sweep and latency figures, transfers.md, the path table
with deployment rules (path_table.md/.csv) and the LLM decode placement table
(placement.md/.csv). Written when the runs hold /memcpy data (docs/analysis.md)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .. import outfiles
from ..model import pathtable

from . import placement

from . import transfer_figures

from ..results import transfers
from ..model.peaks import ASSUMED_MARK, ASSUMED_NOTE
from ..model.rules import rules
from ..render import style
from ..render.items import Context, draw, item
from .sections import Part, by_key, figure_lines
from ..render.tables import markdown, num
from ..render.mdtext import code, safe


def transfers_markdown(cases: pd.DataFrame, with_host: bool) -> str:
    """transfers.md: saturation size per sweep group, latency per size and direction."""
    lines = ["# Host<->device transfers", "",
             f"Sweeps: {style.figure_links('transfer_sweep')}; the "
             f"saturation size is the smallest size reaching >= "
             f"{transfers.SATURATION_FRACTION:.0%} of the group's largest median. "
             f"Latency: {style.figure_links('transfer_latency')}, "
             "host-observed cudaMemcpyAsync + synchronise.", "", "## Size sweeps", ""]
    groups = transfers.sweep_groups(cases)
    if groups:
        rows = []
        for g in groups:
            first, saturated = g.iloc[0], transfers.saturation(g)
            at = g[g["size_bytes"] == saturated]["median_GBps"] if saturated else []
            rows.append(([first["host"]] if with_host else []) + [
                transfers.gpu_label(first), first["direction"], first["engine"], first["alloc"],
                transfers.group_label(first, ("host_numa",)),
                transfers.size_label(saturated) if saturated else "",
                num(at.iloc[0] if len(at) else None), num(g["median_GBps"].max()),
                transfers.size_label(g["size_bytes"].max())])
        lines += markdown((["host"] if with_host else []) + [
            "GPU", "direction", "engine", "alloc", "host buffer", "saturation size",
            "GB/s there", "largest median GB/s", "largest size"], rows)
    else:
        lines += ["_No size sweep in these runs (`mempath memcpy --sweep`)._", ""]
    lines += ["## Latency", ""]
    small = transfers.latency(cases)
    if small.empty:
        return "\n".join(lines + ["_No latency cases in these runs (`mempath memcpy "
                                  "--latency`)._", ""])
    keys = ["host", "run", "gpu", "host_numa", "cpu_numa", "alloc", "engine"]
    for _, part in small.groupby(keys, sort=False):
        first = part.iloc[0]
        title = f"{transfers.gpu_label(first)} {transfers.group_label(first)}"
        lines += [f"### {first['host'] + ': ' if with_host else ''}{title}", ""]
        directions = [d for d in transfers.DIRECTIONS if d in set(part["direction"])]
        rows = []
        for size, at in part.groupby("size_bytes"):
            cells: list[Any] = [transfers.size_label(size)]
            for d in directions:
                hit = at[at["direction"] == d]
                cells += ([num(hit["median_time_s"].iloc[0] * 1e6, 2),
                           num(hit["p99_time_s"].iloc[0] * 1e6, 2)] if not hit.empty
                          else ["", ""])
            rows.append(cells)
        lines += markdown(["size"] + [f"{d} {s} µs" for d in directions
                                    for s in ("median", "p99")], rows)
    return "\n".join(lines)


def _pct(row: pd.Series) -> str:
    return num(row["pct_of_peak"], 0) + (ASSUMED_MARK if pd.notna(row["pct_of_peak"]) and row["peak_assumed"] else "")


def path_markdown(tables: Mapping[str, tuple[pd.DataFrame, list[tuple[int, str, str]],
                                             list[str]]]) -> str:
    lines = ["# Path table", "",
             "Every path between a GPU and a memory of the node: kernel reads and writes "
             "(/bw, the path matrix's best case), copy-engine transfers with each host node "
             "(/memcpy, best allocator at the largest size) and GPU-to-GPU paths. GB/s is "
             "the measured median; % of peak uses the theoretical peak of summary.md "
             "(bidir: both directions of the slowest link, bounded by the host memory). "
             "The comment and the rules below are derived from these numbers "
             "(docs/analysis.md).", ""]
    for host, (table, missing, advice) in tables.items():
        lines += [f"## Host {code(host)}", ""]
        if table.empty:
            lines += ["_No GPU path was measured._", ""]
        else:
            lines += markdown(["GPU", "path", "measured by", "GB/s", "peak GB/s", "% of peak",
                             "comment"],
                            [[f"gpu{r['gpu']}", r["path"], r["how"], num(r["GBps"]),
                              num(r["peak_GBps"]), _pct(r), r["comment"]]
                             for _, r in table.iterrows()])
            if (table["pct_of_peak"].notna() & table["peak_assumed"].eq(True)).any():
                lines += [ASSUMED_NOTE, ""]
        if missing:
            lines += ["Not measured:", ""] + [f"- gpu{g}: {safe(p)}" + (f": {safe(why)}" if why else "")
                                              for g, p, why in missing] + [""]
        lines += ["### Deployment rules", ""]
        lines += [f"- {rule}" for rule in advice] or ["_Too few paths measured for a rule._"]
        lines.append("")
    return "\n".join(lines)


def write(ctx: Context) -> Part:
    """Write the transfer files into ``ctx.out``; nothing but a note without /memcpy data."""
    runs, out, topologies, models = ctx.runs, ctx.out, ctx.topologies, ctx.models
    with_host, entries, bw_cases, active_bytes = ctx.many, ctx.entries, ctx.cases, ctx.active_bytes
    section = Part()
    cases, unusable = transfers.load(runs)
    if unusable:
        section.notes.append(unusable)
        section.lines = [f"_Not produced: {unusable}._", ""]
        return section
    sweep, latency = (draw(ctx, by_key(key)).files for key in (transfer_figures.SWEEP_STEM,
                                                                transfer_figures.LATENCY_STEM))
    section.files += sweep + latency
    outfiles.write_text(out / "transfers.md", transfers_markdown(cases, with_host))
    section.files.append(out / "transfers.md")

    tables, places = {}, {}
    for host, topology in topologies.items():
        node = pathtable.Node.of(topology)
        table, missing = pathtable.build(host, topology, models[host], entries, bw_cases,
                                         cases)
        mine = cases[cases["host"] == host]
        tables[host] = (table, missing, rules(table, mine, host, node.gpus))
        places[host] = placement.build(table, host, node.gpus, node.host_nodes, active_bytes)
    outfiles.write_text(out / "path_table.md", path_markdown(tables))
    outfiles.write_csv(pd.concat([t for t, _, _ in tables.values()] or [pd.DataFrame(columns=pathtable.COLUMNS)]),
                       out / "path_table.csv")
    outfiles.write_text(out / "placement.md", placement.markdown(places, active_bytes))
    outfiles.write_csv(pd.concat([p for p, _ in places.values()] or [pd.DataFrame(columns=placement.COLUMNS)]),
                       out / "placement.csv")
    section.files += [out / n for n in ("path_table.md", "path_table.csv", "placement.md",
                                        "placement.csv")]

    if not sweep:
        section.missing.append("transfer sweep not drawn: no measured `mempath memcpy "
                               "--sweep` group")
    if not latency:
        section.missing.append("transfer latency not drawn: no measured `mempath memcpy "
                               "--latency` case")
    if all(t.empty for t, _, _ in tables.values()):
        section.missing.append("path table empty: no GPU path was measured")
    section.lines = [
        "- [Path table and deployment rules](path_table.md) ([CSV](path_table.csv))",
        f"- [LLM decode placement](placement.md) ([CSV](placement.csv)), "
        f"{active_bytes / 1e9:.3g} GB active per token",
        "- [Transfer sizes and latency](transfers.md)", ""]
    for stem, title, files, why in (
            (transfer_figures.SWEEP_STEM, "Transfer size sweep", sweep, "no size sweep"),
            (transfer_figures.LATENCY_STEM, "Small-transfer latency", latency,
             "no latency case")):
        section.lines += figure_lines(stem, title, None if files else why)
    return section


@item("transfers", "", "Transfers and placement", "section", ("memcpy/cases", "bw/cases"), "", order=10)
def _section(ctx: Context) -> Part:
    if "memcpy/cases" not in ctx.runs.tables and not ctx.gpu_hosts():
        return Part()  # no GPU, no host<->device transfer to measure: nothing is missing
    return write(ctx)
