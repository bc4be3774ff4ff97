"""The report folder: path matrix (Markdown, CSV), figures and summary.md."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .. import outfiles
from ..render import html

from . import matrix
from ..results.cases import CASE_COLUMNS, mark_placement, misplaced_note, ordered
from ..errors import ERRORS_LOG, InputError, record_failure
from ..results.io import RunSet
from .placement import DEFAULT_ACTIVE_BYTES
from ..render.items import Context, Drawn, draw, registry
from .sections import by_key, figure_lines
from ..render.mdtext import code, safe, text
from ..render.tables import markdown
from ..render.provenance import runs_table

CASES_TABLE = "bw/cases"
#: The report's list of the files it wrote, so that a later report into the same folder
#: removes what it no longer writes (stale figures) and never a file of the user's.
MANIFEST = ".mempath-report"


@dataclass
class Report:
    """What was written and what could not be, with the reason."""

    out: Path
    files: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # parts not produced, and why
    failed: list[str] = field(default_factory=list)  # parts that raised (errors.log has the traces)


def _cases(runs: RunSet) -> pd.DataFrame:
    cases = runs.table(CASES_TABLE, CASE_COLUMNS)
    lacking = [c for c in CASE_COLUMNS if c not in cases]
    if lacking:
        names = ", ".join(run.name for run in runs.runs)
        raise InputError(f"{CASES_TABLE} of {names} lacks the columns {', '.join(lacking)}; "
                         "it was written by a mempath of another schema (docs/schema.md)")
    return cases


def _gib(value: Any) -> str:
    return f"{int(value) / 2**30:.1f}" if value is not None else ""


def _processor(p: Mapping[str, Any]) -> str:
    if p.get("kind") != "gpu":
        return f"{p.get('cores', '?')} cores"
    link = p.get("link") or {}
    wire = f"PCIe gen{link.get('gen')} x{link.get('width')}" if link.get("type") == "pcie" \
        else str(link.get("type", "?"))
    return f"{p.get('model', '?')}, {p.get('sm_count', '?')} SMs, {wire}"


def _nodes(hosts: list[str], topologies: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each node's description, once for nodes that are alike (a fleet of one kind): the
    body is said once under the names of all the nodes it describes."""
    bodies: dict[str, list[str]] = {}
    for host in hosts:
        body = "\n".join(_node(topologies[host]))
        bodies.setdefault(body, []).append(host)
    lines = []
    for body, alike in bodies.items():
        names = ", ".join(code(h) for h in alike)
        lines += [f"## Node {names}" if len(alike) == 1 else f"## Nodes {names} (alike)", "", *body.split("\n")]
    return lines


def _node(topology: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if not topology:
        return lines + ["_The runs hold no topology._", ""]
    lines += [f"{text(topology.get('cpu_model', '?'))} ({text(topology.get('arch', '?'))}).", ""]
    processors = topology.get("processors", [])
    memories = topology.get("memories", [])
    lines += markdown(pd.DataFrame({"processor": [p["name"] for p in processors],
                                    "kind": [p.get("kind", "") for p in processors],
                                    "what": [_processor(p) for p in processors]}, dtype=object))
    lines += markdown(pd.DataFrame({"memory": [m["name"] for m in memories],
                                    "kind": [m.get("kind", "") for m in memories],
                                    "GiB": [_gib(m.get("bytes")) for m in memories],
                                    "GPU": [m.get("gpu") for m in memories]}, dtype=object))
    return lines


def _peaks(entries: pd.DataFrame, overrides: Mapping[str, float]) -> list[str]:
    lines = ["## Theoretical peaks", "",
             "Peak of a path = the slowest of its links and its memory (docs/analysis.md); "
             "source `discovered` (topology facts such as PCIe gen and width), `table` "
             "(model tables) or `user` (--peaks), with the document behind the figure (citation; "
             "`assumed` where no source confirms it). Where a part is unknown the peak bounds "
             "the known parts only. % of peak is given for read and write; copy moves "
             "bytes over two paths and is shown in GB/s only.", ""]
    if overrides:
        lines += ["User peaks: " + ", ".join(f"{code(k)} = {v:g}" for k, v in overrides.items()), ""]
    if entries.empty:
        return lines + ["_No read or write path to give a peak for._", ""]
    paths = entries.drop_duplicates(["host", "pu", "mem"]).fillna(
        {"peak_limit": "", "peak_source": "", "peak_unknown": "", "peak_citation": ""})
    shown = paths.assign(peak_GBps=paths["peak_GBps"].map(lambda v: "unknown" if pd.isna(v) else f"{v:.1f}"))
    return lines + markdown(shown[["host", "pu", "mem", "via", "peak_GBps", "peak_limit", "peak_source",
                                   "peak_unknown", "peak_citation"]].set_axis(
        ["host", "PU", "memory", "via", "peak GB/s", "limited by", "source", "unknown parts", "citation"], axis=1))


def _families(runs: RunSet, bw: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every cases table of the runs by family (`bw`, `memcpy`, `stream`, ... `nccl`), bw
    with its placement marked."""
    tables = {name.removesuffix("/cases"): table for name, table in sorted(runs.tables.items())
              if name.endswith("/cases") and "status" in table}
    if "bw" in tables:
        tables["bw"] = bw
    return tables


def _counts(runs: RunSet, bw: pd.DataFrame) -> list[str]:
    """Rows of each family's cases table (a file's `N cases written`) by host and status,
    then the reasons of those that did not run as asked."""
    lines = ["## Cases", ""]
    families = {f: t for f, t in _families(runs, bw).items() if not t.empty}
    if not families:
        return lines + ["_No case in these runs._", ""]
    every = pd.concat([t[["host", "status", "reason"]].assign(family=f) for f, t in families.items()],
                      ignore_index=True)
    counts = every.groupby(["host", "family", "status"]).size().unstack(fill_value=0)
    statuses = ordered({"ok", "skipped", "failed", *counts.columns}, ["ok", "skipped", "failed"])
    counts = counts.reindex(columns=statuses, fill_value=0)
    lines += markdown(counts.rename_axis(columns=None).reset_index())
    notes = [(f, s, r or "no reason given") for f, s, r in
             every.loc[every["status"] != "ok", ["family", "status", "reason"]].fillna("").itertuples(False)]
    if "bw" in families:
        moved = bw[(bw["status"] == "ok") & ~bw["placed"]]
        notes += [("bw", "ok, pages elsewhere", misplaced_note(row))
                  for row in moved.fillna({"placement": "", "dst_placement": ""}).itertuples()]
    if notes:
        reasons = pd.DataFrame(notes, columns=["family", "status", "reason"])
        lines += markdown(reasons.groupby(["family", "status", "reason"], sort=False).size()
                          .rename("cases").reset_index())
    return lines


def _remove_stale(out: Path, written: list[Path]) -> None:
    """Delete the files the previous report listed in MANIFEST that this one did not write."""
    manifest = out / MANIFEST
    keep = {path.resolve() for path in written}
    previous = manifest.read_text(errors="replace").splitlines() if manifest.is_file() else []
    for name in previous:
        path = (out / name).resolve()
        # Only plain files directly in the folder: a doctored manifest cannot reach out.
        if path.parent == out.resolve() and path not in keep and path.is_file():
            path.unlink()
    outfiles.write_text(manifest, "".join(f"{path.name}\n" for path in written))


#: The report's own figures under "Results", beside the path matrix: (item key, its name
#: in the Missing list).
RESULTS = (("thread_scaling", "thread scaling"), ("copy_heatmap", "copy heatmap"))


def _results(report: Report, ctx: Context) -> list[str]:
    """The RESULTS figures' summary lines, each embedded or why not: where one had nothing
    to draw, its line in ``report.missing`` too; where it raised, its line in
    ``report.failed`` and its trace in errors.log, as a section's (a figure's bug must
    cost that figure only)."""
    lines: list[str] = []
    for key, name in RESULTS:
        item = by_key(key)
        try:
            drawn = draw(ctx, item)
        except Exception as err:  # noqa: BLE001  one figure's bug must not cost the whole report
            report.failed.append(record_failure(report.out, name, err))
            drawn = Drawn(why_not=f"it raised an error (under Not written, below; trace in `{ERRORS_LOG}`)")
        else:
            if not drawn.files:
                report.missing.append(f"{name} not drawn: {drawn.why_not}")
        report.files += drawn.files
        lines += figure_lines(key, item.title, None if drawn.files else drawn.why_not, " ".join(drawn.notes))
    return lines


def write_report(runs: RunSet, out: Path, overrides: Mapping[str, float] | None = None,
                 active_bytes: float = DEFAULT_ACTIVE_BYTES,
                 rejected: Sequence[str] = ()) -> Report:
    """Write every report file into ``out`` (created); never fails on missing data.

    ``active_bytes``: bytes read per generated token in the LLM placement table.
    ``rejected``: one line per input file that could not be used (listed in the summary).
    """
    overrides = dict(overrides or {})
    out.mkdir(parents=True, exist_ok=True)
    (out / ERRORS_LOG).unlink(missing_ok=True)  # an earlier run's errors are not this one's
    report = Report(out)
    base = Context.of(runs, out, overrides)  # the nodes' topologies and peak models, as the paper's
    topologies, models, hosts = base.topologies, base.models, runs.hosts()
    cases = mark_placement(_cases(runs), topologies)
    order = matrix.topology_order(topologies)

    entries = matrix.entries(cases, models, order)
    outfiles.write_text(out / "path_matrix.md", matrix.markdown(entries, order))
    outfiles.write_csv(entries, out / "path_matrix.csv")
    report.files += [out / "path_matrix.md", out / "path_matrix.csv"]

    ops = set(cases["op"])
    if entries.empty:
        report.missing.append("no read or write case: the path matrix is empty")
    for op in ("read", "write", "copy"):
        if op not in ops:
            report.missing.append(f"no {op} case in these runs")
    context = replace(base, entries=entries, cases=cases, active_bytes=active_bytes)
    results = _results(report, context)
    sections: list[str] = []
    for section in (i for i in registry(__package__) if i.kind == "section"):
        try:
            part = section.build(context)
        except Exception as err:  # noqa: BLE001  one section's bug must not cost the whole report
            report.failed.append(record_failure(out, f"section {section.title!r}", err))
            continue
        report.files += part.files
        report.missing += part.missing
        report.notes += part.notes
        if part.lines:
            sections += [f"## {section.title}", ""] + part.lines

    lines = ["# mempath report", "",
             f"Host(s): {', '.join(code(h) for h in hosts) or 'none'}; "
             f"{len(runs.runs)} run(s); tables: {', '.join(map(text, runs.tables)) or 'none'}.", ""]
    lines += runs_table(runs)
    lines += _nodes(hosts, topologies)
    lines += ["## Results", "",
              "- [Path matrix](path_matrix.md) (processor x memory, median GB/s, % of peak), "
              "[CSV](path_matrix.csv)", ""]
    lines += results + sections
    lines += _peaks(entries, overrides)
    lines += _counts(runs, cases)
    if report.failed:
        lines += ["## Not written: errors", "", "These parts raised an error (traces in `errors.log`); "
                  "the rest of the report stands.", ""] + [f"- {safe(f)}" for f in report.failed] + [""]
    if report.missing:
        lines += ["## Missing", ""] + [f"- {safe(m)}" for m in report.missing] + [""]
    if rejected:
        lines += ["## Files not read", ""] + [f"- {safe(r)}" for r in rejected] + [""]
    outfiles.write_text(out / "summary.md", "\n".join(lines))
    report.files.append(out / "summary.md")
    report.files += html.write_index(lines, out)
    _remove_stale(out, report.files)
    return report
