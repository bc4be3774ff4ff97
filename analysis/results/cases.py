"""Which cases stand for a path: the selection rules shared by tables and figures.

A case stands for its path when it ran (status ok) alone (no ``noise``), out of cache
(not ``cache_resident``) and its pages were where it names (``placement``): managed
memory migrates on access, so a CPU reading managed memory "on gpu0" may read host
memory. Where a case is drawn is one rule (``drawn_under``) for the report, the paper and
the binary's own ``placed`` verdict (C++ drawn_under, tested against the same cases);
``relocated`` moves the cases of a table under it (the paper's bandwidth and copy figures).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

# Columns of /bw/cases the report uses (docs/schema.md).
CASE_COLUMNS = ("case_id", "op", "pu", "pu_kind", "mem", "dst_mem", "alloc", "kernel",
                "threads", "size_bytes", "noise", "via", "status", "reason",
                "median_GBps", "min_GBps", "max_GBps", "cache_resident", "placement",
                "dst_placement")
SEP = " | "  # between several reasons of one path
NOT_MEASURED = "only contention (--noise) or in-cache cases ran"


def memory_aliases(topology: Mapping[str, Any]) -> dict[str, str]:
    """HBM NUMA node -> gpuN: one memory under two names on Grace Hopper (docs/topology.md)."""
    return {f"numa{m['numa']}": m["name"] for m in topology.get("memories", [])
            if m.get("kind") == "device" and m.get("numa") is not None}


def same_memory(topology: Mapping[str, Any], a: str, b: str) -> bool:
    """``a`` and ``b`` name one memory (``numa4`` and ``gpu0`` on Grace Hopper)."""
    aliases = memory_aliases(topology)
    return aliases.get(a, a) == aliases.get(b, b)


def mark_placement(cases: pd.DataFrame, topologies: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Add the column ``placed``: every buffer of the case is drawn under the memory it
    names (drawn_under).

    Files of 0.2.0 on carry the binary's own verdict (``placed`` 1/0, -1 for a case that did
    not run; C++ placed_as_named, the same rule); older files get it here.
    """
    rows = cases.fillna({"placement": "", "dst_placement": "", "dst_mem": ""})
    dst_allocs = cases["dst_alloc"].fillna("") if "dst_alloc" in cases else cases["alloc"]
    placed = [all(drawn_under(topologies.get(r.host, {}), mem, alloc, where)[0] == mem
                  for mem, alloc, where in ((r.mem, r.alloc, r.placement),
                                            (r.dst_mem, dst_alloc or r.alloc, r.dst_placement)) if mem)
              for r, dst_alloc in zip(rows.itertuples(), dst_allocs)]
    if "placed" in cases:
        recorded = pd.to_numeric(cases["placed"], errors="coerce").fillna(-1)
        placed = [bool(r == 1) if r >= 0 else p for r, p in zip(recorded, placed)]
    return cases.assign(placed=pd.Series(placed, index=cases.index, dtype=bool))


def measured(cases: pd.DataFrame) -> pd.DataFrame:
    """Cases that stand for their path (module docstring); ``placed`` where marked."""
    if cases.empty:
        return cases
    mask = (cases["status"] == "ok") & np.isfinite(cases["median_GBps"].astype(float))
    mask &= cases["noise"].fillna("") == ""
    mask &= cases["cache_resident"].fillna(0).astype(int) != 1
    if "placed" in cases:
        mask &= cases["placed"].astype(bool)
    return cases[mask]


def _representative(group: pd.DataFrame) -> pd.DataFrame:
    """The full-width cases of a group: the largest CPU thread count, the GPU grid kernel."""
    if (group["pu_kind"] == "gpu").all():
        grid = group[group["kernel"] == "grid"]
        return grid if not grid.empty else group
    return group[group["threads"] == group["threads"].max()]


def best(cases: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per ``keys``, the measured case with the highest median among the full-width ones."""
    ran = measured(cases)
    if ran.empty:
        return ran
    rows = [_representative(g)["median_GBps"].astype(float).idxmax()
            for _, g in ran.groupby(list(keys), sort=False, dropna=False)]
    return ran.loc[rows].reset_index(drop=True)


def by_threads(cases: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per ``keys`` and thread count, the measured case with the highest median."""
    ran = measured(cases)
    if ran.empty:
        return ran
    index = ran.groupby([*keys, "threads"], sort=False, dropna=False)["median_GBps"].idxmax()
    return ran.loc[index.values].sort_values([*keys, "threads"]).reset_index(drop=True)


def natural_key(name: str) -> tuple[object, ...]:
    """cpu2 before cpu10."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def rank(preferred: Sequence[str], name: str) -> tuple[object, ...]:
    """Sort key: the position in ``preferred`` (the topology's order), else after them all."""
    return (preferred.index(name),) if name in preferred else (len(preferred), *natural_key(name))


def ordered(names: Iterable[str], preferred: Sequence[str] = ()) -> list[str]:
    """The distinct ``names`` in the order of ``preferred``, the rest naturally sorted."""
    return sorted(set(names), key=lambda name: rank(preferred, name))


def misplaced_note(row: Any) -> str:
    """Why a case that ran does not stand for its path (a row of cases, itertuples())."""
    got = row.placement or "unknown"
    if row.dst_mem:
        got, want = f"{got} -> {row.dst_placement or 'unknown'}", f"{row.mem} -> {row.dst_mem}"
    else:
        want = row.mem
    if "unknown" in got:
        return f"{row.alloc}: placement unknown, managed pages may have migrated ({want})"
    return f"{row.alloc}: pages were on {got}, not {want}"


def unmeasured(group: pd.DataFrame) -> tuple[str, str]:
    """Status and reasons of a path without a measured case.

    The status is the first of failed, misplaced (ran, pages elsewhere), not measured
    (ran only under contention or in cache) and skipped that applies; the reasons are
    those of all of them.
    """
    ran = group[group["status"] == "ok"].fillna({"placement": "", "dst_placement": "",
                                                  "dst_mem": ""})
    misplaced = ran[~ran["placed"].astype(bool)] if "placed" in ran else ran.iloc[:0]
    notes = {status: list(group.loc[group["status"] == status, "reason"].fillna("")
                          .replace("", "no reason given"))
             for status in ("failed", "skipped")}
    notes["misplaced"] = [misplaced_note(row) for row in misplaced.itertuples()]
    notes["not measured"] = [NOT_MEASURED] if len(ran) > len(misplaced) else []
    order = ("failed", "misplaced", "not measured", "skipped")
    status = next((s for s in order if notes[s]), "not measured")
    reasons = [reason for s in order for reason in notes[s]] or [NOT_MEASURED]
    return status, SEP.join(dict.fromkeys(reasons))


#: What a placement reads when nobody can say where the pages are: none recorded, the
#: binary's ``unknown``, a summary line's ``-``.
UNKNOWN_PLACEMENTS = ("", "unknown", "-")


def placement_text(placement: Any) -> str:
    """A recorded placement as text, '' where a table has none (None, NaN)."""
    if placement is None or (isinstance(placement, float) and math.isnan(placement)):
        return ""
    return str(placement).strip()


def is_split(text: str) -> bool:
    """Pages over several memories: ``numa0:0.97,numa1:0.03``, a staged copy's ``numa0;numa1``."""
    return any(c in text for c in ",:;")


def one_memory(topology: Mapping[str, Any], placement: Any) -> str | None:
    """The one memory of the node a placement names (``numa4``); None where it is unknown,
    split, or names no memory the topology lists (the ``host`` of files before managed
    placement was read from the page tables: the last prefetch's side, not a memory).
    What was recorded, before any rule of where a case is drawn (``drawn_under``)."""
    text = placement_text(placement)
    if text in UNKNOWN_PLACEMENTS or is_split(text):
        return None
    known = [m["name"] for m in topology.get("memories", [])]
    return None if known and text not in known else text


def _on_interleave_nodes(topology: Mapping[str, Any], text: str) -> bool:
    """Every share of ``text`` on a host node with CPUs, the nodes interleaved pages are
    spread over; a topology without such nodes refutes nothing."""
    hosts = {f"numa{n['id']}" for n in topology.get("numa_nodes", [])
             if n.get("kind") == "host" and n.get("cpus")}
    return not hosts or all(share.split(":")[0] in hosts for share in text.split(","))


def drawn_under(topology: Mapping[str, Any], mem: str, alloc: str, placement: Any) -> tuple[str, str]:
    """(the memory a buffer is drawn under, '') or ('', why it is drawn nowhere).

    The one rule of docs/design.md ("Where a case is drawn"), C++ drawn_under the same,
    both tested against tests/fixtures/placement_cases.txt: where its pages were, never
    where it asked them to be. The named memory where they stayed there (a GPU's HBM NUMA
    node and its gpuN are one memory), else the one memory that holds them. Pages split
    over several memories (``numa0:0.97,numa1:0.03``) stand for none of them, at any
    share, so a case cannot stand for a path in one figure and be dropped from the next.
    An unknown placement (``unknown``, none recorded, a summary line's ``-``) is the named
    memory unless the allocator migrates pages (managed). Interleaved pages stayed in
    ``interleave`` while every page was on a host node with CPUs."""
    mem = str(mem or "")
    text = placement_text(placement)
    if text in UNKNOWN_PLACEMENTS:
        if alloc == "managed":
            return "", f"{alloc} pages of {mem}: placement unknown (managed pages may have moved)"
        return mem, ""
    if mem == "interleave":
        if _on_interleave_nodes(topology, text):
            return mem, ""
        return "", f"{alloc} pages of {mem} were not all on the host nodes they interleave over ({text})"
    if is_split(text):
        return "", f"{alloc} pages of {mem} were split ({text})"
    if same_memory(topology, text, mem):
        return mem, ""
    if one_memory(topology, text) is None:
        return "", f"{alloc} pages of {mem} were on {text}, a memory the topology does not list"
    return text, ""


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
