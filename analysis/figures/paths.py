"""What the paper's path figures share (Figs. 3, 5, 7, 9, 10 and Table II): which processors
they draw and how a panel names one, memory names in short, each row's memory role, the GPU
an allocmatrix run used, and how a published value is held against a path of this run."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..model.roles import role
from ..model.vocabulary import processor_word
from ..render.items import Comparison, Context
from ..results.cases import natural_key
from . import published


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


def with_roles(frame: pd.DataFrame, topologies: Mapping[str, Mapping[str, Any]],
               pu: str = "pu", mem: str = "mem", out: str = "role") -> pd.DataFrame:
    """``out``: the role of ``mem`` seen from ``pu`` (the memory's name where none)."""
    roles = [role(topologies.get(h, {}), p, m) or m for h, p, m in zip(frame["host"], frame[pu], frame[mem])]
    return frame.assign(**{out: roles})


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


# ---------------------------------------------------------------- published values

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


def crosses(via: Any, link: str) -> bool:
    return not link or link in str(via or "").split("+")


def has_path(topology: Mapping[str, Any], kind: str, role_name: str, link: str = "") -> bool:
    """Whether the node has a path of a ``kind`` processor to a memory of that role that
    crosses ``link``: a published value of another kind of path is no comparison."""
    procs = {p["name"]: p for p in topology.get("processors", [])}
    return any(procs.get(p["pu"], {}).get("kind") == kind and p["pu"] in paper_processors(topology)
               and role(topology, p["pu"], p["mem"]) == role_name and crosses(p.get("via"), link)
               for p in topology.get("paths", []))


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


def over_processors(rows: pd.DataFrame, column: str, stat: str) -> tuple[float, str]:
    """The statistic over processors of each processor's median ``column`` ("median", or
    "max" of each one's max), and which processors it spans."""
    if rows.empty:
        return math.nan, "not measured"
    per = rows.groupby("pu")[column].max() if stat == "max" else rows.groupby("pu")[column].median()
    names = sorted(per.index, key=natural_key)
    value = float(per.max()) if stat == "max" else float(per.median())
    return value, f"{stat} over {compact(names)}"
