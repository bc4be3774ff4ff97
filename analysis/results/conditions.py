"""The conditions each case ran in (docs/schema.md "Conditions"; issue 40), read from a result
file's ``conditions/*`` tables and its ``nvml``, ``gpu_conditions`` and ``host_conditions``
attributes: the run's facts and, per case, the readings of its window (the reading before
it and the first one after it) for the GPUs and CPU nodes it used; ``machines`` reads a
mempath-mpi job's other machines' (``machine_conditions``).

Files written before issue 40 (the LLM script's and mempath-mpi's until 2026-11-29) have none:
``of_tables`` and ``of_group`` then return None, and every reader says nothing about
conditions (never a guess). A conditions table that lacks a column is taken as absent too:
the conditions explain a figure, they never make a file unreadable.

The rules that turn these readings into causes are analysis/model/causes.py.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import families

#: The tables, by their short name; the columns of each are src/core/families.def's rows.
TABLES = {name: f"conditions/{name}" for name in ("windows", "readings", "cpus", "gpus")}
#: The run-level root attributes (text; the last two JSON).
ATTRIBUTES = ("nvml", "gpu_conditions", "host_conditions")
#: A mempath-mpi job's other machines' conditions (JSON), read by ``machines``.
MACHINES = "machine_conditions"
_NAMES = {short: tuple(c.name for c in families.columns(table)) for short, table in TABLES.items()}
#: The numpy kinds a column of each families.def type may hold (an Int column read as floats
#: where a DataFrame filled a gap; text as objects or bytes).
_KINDS = {"Int": "iu", "Float": "fiu", "String": "OSU"}
_TYPES = {short: {c.name: c.type for c in families.columns(table)} for short, table in TABLES.items()}
_PART = re.compile(r"(cpu|gpu|numa)([0-9]+)|cpus")


@dataclass
class Window:
    """One case's window: its readings and the parts it used."""

    start: int
    end: int            # -1: no reading after it (the run ended first)
    processors: tuple[str, ...]
    memories: tuple[str, ...]
    via: str
    cases: int = 1      # cases that share these two readings (short cases share them)


@dataclass
class Conditions:
    """One run's conditions: its facts, readings by number, windows by case_id."""

    nvml: str
    gpu_facts: dict[int, dict[str, Any]]
    host: dict[str, Any]
    windows: dict[int, Window]
    readings: dict[int, dict[str, float]]                 # reading -> time_s, read_s, load1, running, self_cpu_s
    cpus: dict[tuple[int, int], dict[str, Any]]           # (reading, numa) -> its row
    gpus: dict[tuple[int, int], dict[str, Any]]           # (reading, gpu) -> its row
    hbm: dict[int, int] = field(default_factory=dict)     # HBM NUMA node -> its GPU (topology)

    def seconds(self, window: Window) -> float:
        """The window's length (NaN where it has no end)."""
        a, b = self.readings.get(window.start), self.readings.get(window.end)
        return b["time_s"] - a["time_s"] if a and b else math.nan

    def gpus_of(self, window: Window) -> list[int]:
        """The GPUs a case used: its GPU processors, device memories and HBM NUMA nodes."""
        found: list[int] = []
        for name in (*window.processors, *window.memories):
            match = _PART.fullmatch(name)
            if not match or match[1] not in ("gpu", "numa"):
                continue
            gpu = int(match[2]) if match[1] == "gpu" else self.hbm.get(int(match[2]))
            if gpu is not None and gpu not in found:
                found.append(gpu)
        return found

    def cpu_nodes_of(self, window: Window) -> list[int]:
        """The CPU nodes whose cores a case ran on: cpuN's node, every node for ``cpus``."""
        nodes = sorted({numa for _, numa in self.cpus})
        found: list[int] = []
        for name in window.processors:
            if name == "cpus":
                return nodes
            match = _PART.fullmatch(name)
            if match and match[1] == "cpu" and int(match[2]) in nodes and int(match[2]) not in found:
                found.append(int(match[2]))
        return found

    def overhead(self) -> tuple[float, float]:
        """(seconds spent reading, seconds from the first reading to the last)."""
        if not self.readings:
            return 0.0, 0.0
        times = [r["time_s"] for r in self.readings.values()]
        return sum(r["read_s"] for r in self.readings.values()), max(times) - min(times)


def _json(text: Any, kind: type) -> Any:
    try:
        value = json.loads(str(text or ""))
    except (ValueError, RecursionError):
        return kind()
    return value if isinstance(value, kind) else kind()


def _rows(table: Mapping[str, Any], short: str) -> list[dict[str, Any]] | None:
    """The table's rows as dicts of plain values; None where it lacks a column or one holds
    values of another type than families.def's (a damaged or hostile file)."""
    names = _NAMES[short]
    if any(name not in table for name in names):
        return None
    arrays = {name: np.asarray(table[name]) for name in names}
    if any(a.ndim != 1 or (a.size and a.dtype.kind not in _KINDS[_TYPES[short][name]]) for name, a in arrays.items()):
        return None
    if any(a.dtype.kind == "O" and not all(isinstance(v, (str, bytes)) for v in a.tolist())
           for a in arrays.values()):
        return None
    columns = {name: a.tolist() for name, a in arrays.items()}
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        return None
    count = lengths.pop() if lengths else 0
    return [{name: columns[name][i] for name in names} for i in range(count)]


def _hbm(topology: Mapping[str, Any] | None) -> dict[int, int]:
    """Each HBM NUMA node's GPU (a GH200's HBM read through its NUMA node)."""
    found = {}
    for memory in (topology or {}).get("memories", []) or []:
        if isinstance(memory, dict) and memory.get("kind") == "hbm" and isinstance(memory.get("numa"), int) \
                and isinstance(memory.get("gpu"), int):
            found[memory["numa"]] = memory["gpu"]
    return found


def _parts(text: Any) -> tuple[str, ...]:
    return tuple(p for p in str(text or "").split(",") if p)


def of_tables(attrs: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]],
              topology: Mapping[str, Any] | None = None) -> Conditions | None:
    """The conditions of one file from its attributes and its tables by name
    (``conditions/windows``: a DataFrame or a dict of columns); None where it has none."""
    if TABLES["windows"] not in tables or "nvml" not in attrs:
        return None
    read = {short: _rows(tables.get(table, {}), short) for short, table in TABLES.items()}
    if any(rows is None for rows in read.values()):
        return None
    for short, rows in read.items():  # text as str (bytes from a low-level read), integers as int
        types = _TYPES[short]
        for row in rows:
            for key, value in row.items():
                if isinstance(value, bytes):
                    row[key] = value.decode("utf-8", "backslashreplace")
                elif types[key] == "Int" and isinstance(value, float):
                    row[key] = int(value) if math.isfinite(value) else -1
    windows = {int(r["case_id"]): Window(int(r["start"]), int(r["end"]), _parts(r["processors"]),
                                         _parts(r["memories"]), str(r["via"] or ""))
               for r in read["windows"]}
    shared = Counter((w.start, w.end) for w in windows.values())
    for w in windows.values():
        w.cases = shared[(w.start, w.end)]
    facts = {}
    for entry in _json(attrs.get("gpu_conditions"), list):
        if isinstance(entry, dict) and isinstance(entry.get("gpu"), int):
            links = entry.get("nvlinks")
            facts[entry["gpu"]] = {**entry, "nvlinks": links if isinstance(links, list) else []}
    host = _json(attrs.get("host_conditions"), dict)
    if not isinstance(host.get("cpu_nodes", []), list):
        host["cpu_nodes"] = []
    return Conditions(
        nvml=str(attrs.get("nvml") or ""), gpu_facts=facts, host=host,
        windows=windows, readings={int(r["reading"]): r for r in read["readings"]},
        cpus={(int(r["reading"]), int(r["numa"])): r for r in read["cpus"]},
        gpus={(int(r["reading"]), int(r["gpu"])): r for r in read["gpus"]}, hbm=_hbm(topology))


def machines(attrs: Mapping[str, Any]) -> dict[str, Conditions]:
    """A mempath-mpi job's other machines' conditions by host (``machine_conditions``: each
    machine's readings as `mempath export` writes a run as JSON); {} where the file has none
    and for an entry that is damaged (never a refused file)."""
    found: dict[str, Conditions] = {}
    for entry in _json(attrs.get(MACHINES), list):
        own = entry.get("attributes") if isinstance(entry, dict) else None
        tables = entry.get("tables") if isinstance(entry, dict) else None
        if not isinstance(own, dict) or not isinstance(tables, dict):
            continue
        columns: dict[str, dict[str, list]] = {}
        for short, table in TABLES.items():
            rows = tables.get(table, {}).get("rows") if isinstance(tables.get(table), dict) else None
            if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
                # JSON's null is a Float column's NaN
                columns[table] = {name: [math.nan if r.get(name) is None and _TYPES[short][name] == "Float"
                                         else r.get(name) for r in rows] for name in _NAMES[short]}
        try:
            cond = of_tables(own, columns, _json(own.get("topology"), dict))
        except (ValueError, TypeError):  # ragged or nested rows: numpy refuses them
            cond = None
        if cond is not None:
            found[str(own.get("host") or f"machine {len(found) + 2}")] = cond
    return found


def of_group(root: Any, attrs: Mapping[str, Any], topology: Mapping[str, Any] | None = None) -> Conditions | None:
    """The conditions of an open file (h5file.walk's root Group) whose root attributes
    ``attrs`` the caller read (the three of ATTRIBUTES among them where the file has them)."""
    if "nvml" not in attrs or root.group(TABLES["windows"]) is None:
        return None
    tables = {}
    for table in TABLES.values():
        group = root.group(table)
        if group is None:
            return None
        tables[table] = group.table()
    return of_tables(attrs, tables, topology)
