"""A case in words, one phrasing for every reader: the report's tables of cases ("Conditions
and causes") and the fleet's reasons (fleet/table.py WORDS), which an admin reads as
"gpu2 HBM read 3,310 GB/s = fleet median -14 %" (issue 11), so that one case is never said
two ways (issue 50).

A path's case (bw, chase, ping-pong, a transfer) is said with the node's vocabulary
(model/vocabulary.py: LPDDR, DDR, HBM), which the template of a row cannot say: the kind of
the processor's own memory ("gpu2 HBM read"), else the memory, its kind and the links
("gpu0 read of numa0 (LPDDR, pinned) over gpu0's C2C"). A case of another family is said by
its FAMILY row's words in src/core/families.def, a template of its cases columns, so that a
new family needs no line here; a family with neither (a newer file's) is "FAMILY case N".
C++ says a case alike (src/core/case_words.cpp: the progress line, the watchdog's `aborted`
text), and both are tested against one table, tests/fixtures/case_words_cases.txt.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..results.families import FAMILIES
from .vocabulary import gpu_of_memory, memory, memory_word

#: The allocators a memory's own kind implies (a NUMA node's, a GPU's): left unsaid.
USUAL_ALLOCS = ("numa", "device")
#: A transfer's usual allocators (pinned host memory, a GPU's own) and copy engine, the
#: vetting preset's: left unsaid.
USUAL_COPY = ("pinned", "device", "ce")


class _Cells(dict):
    def __missing__(self, key: str) -> None:  # an older file's missing column reads "None"
        return None


def cell_int(value: Any, default: int = -1) -> int:
    """A cell as an integer; ``default`` where an older file has none (None, NaN)."""
    try:
        return default if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)
    except (TypeError, ValueError):
        return default


def _kind(topology: Mapping[str, Any], mem: str) -> str:
    return memory_word(topology, mem) or mem


def _path(row: Mapping[str, Any], topology: Mapping[str, Any], what: str, over: str) -> str:
    """A processor's ``what`` (an operation, "latency") on a memory: "gpu2 HBM read" on its
    own memory, "gpu0 read of numa0 (LPDDR, pinned) over gpu0's C2C" elsewhere."""
    pu, mem = row["pu"], row["mem"]
    kind = _kind(topology, mem)
    if row["alloc"] not in USUAL_ALLOCS:
        kind += f", {row['alloc']}"
    local = row["via"] == "local"
    if local and str(mem).startswith("numa") and gpu_of_memory(memory(topology, mem)) is not None:
        kind += f" as {mem}"  # the HBM's NUMA node, apart from its device memory
    if what == "copy" and row.get("dst_mem") and row["dst_mem"] != mem:
        dst = row["dst_mem"]
        return f"{pu} copy {mem} ({kind}) to {dst} ({_kind(topology, dst)})"
    return f"{pu} {kind} {what}" if local else f"{pu} {what} of {mem} ({kind}){over}"


def _bw(row: Mapping[str, Any], topology: Mapping[str, Any], over: str) -> str:
    return _path(row, topology, str(row["op"]), over)


def _chase(row: Mapping[str, Any], topology: Mapping[str, Any], over: str) -> str:
    return _path(row, topology, "latency", over)


def _pingpong(row: Mapping[str, Any], topology: Mapping[str, Any], over: str) -> str:
    alloc = "" if row["alloc"] in USUAL_ALLOCS else f", {row['alloc']}"
    return f"ping-pong {row['a']}-{row['b']} ({row['mem']} {_kind(topology, row['mem'])}{alloc})"


def _memcpy(row: Mapping[str, Any], topology: Mapping[str, Any], over: str) -> str:
    unusual = [str(row[c]) for c in ("alloc", "engine") if row[c] is not None and row[c] not in USUAL_COPY]
    dst = cell_int(row["dst_gpu"])
    if dst >= 0:
        return f"gpu{row['gpu']} to gpu{dst} copy" + (f" ({', '.join(unusual)})" if unusual else "")
    host = f"numa{row['host_numa']}"
    return f"gpu{row['gpu']} {str(row['direction']).upper()} copy ({', '.join([host, *unusual])})"


_SAID: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any], str], str]] = {
    "bw": _bw, "chase": _chase, "pingpong": _pingpong, "memcpy": _memcpy}


def case_words(family: str, row: Mapping[str, Any], topology: Mapping[str, Any], over: str = "") -> str:
    """Case ``row`` of ``family``'s cases table in a few words, on the node of ``topology``.
    ``over``: the links the path crosses, in words ("gpu0's C2C"), said after a path that is
    not the processor's own memory where the caller names them (the fleet does)."""
    cells = _Cells(row)
    if family in _SAID:
        return _SAID[family](cells, topology, f" over {over}" if over else "")
    template = FAMILIES[family].words if family in FAMILIES else ""
    return template.format_map(cells) if template else f"{family} case {cells['case_id']}"
