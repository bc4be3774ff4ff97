"""The fleet table: one tidy row per (node, path, metric) of a result file.

This is the shared interface (docs/fleet.md): the fleet analysis and the
history database read exactly these columns. A ``path`` names a case without the values
that differ between alike nodes (the GPU grid's thread count follows the SM count), so
that the same path on every node of a kind can be compared; ``component`` names the part
of the node the path measures, so that a deviation can be blamed on a GPU, a socket or a
link.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..model import causes
from ..model.case_words import case_words
from ..model.vocabulary import gpu_of_memory
from ..robust import MAD_SCALE, grouped_medians
from ..results import conditions, families
from ..results.h5file import Group, RunFileError, check_non_negative, one_line, shown, walk
from ..results.io import Run, parse_topology
from ..results.sockets import socket_count
from . import case_paths

COLUMNS = ("night", "node", "node_kind", "family", "path", "component", "metric", "value",
           "status", "higher_is_better", "synthetic", "gpu_uuids")
#: Beside COLUMNS in fleet_columns() only (not in the shared schema nor the history): the
#: path in words for a reason an admin reads, "gpu2 HBM read" (docs/fleet.md).
WORDS = "what"
#: Beside COLUMNS too: the relative robust spread of the case's repetitions on its node
#: (1.4826 MAD / median of its samples; NaN where it had fewer than 2 or the file cannot say).
#: score.py widens a case's z scale by it, so one noisy measurement is not condemned.
SPREAD = "spread"
#: Beside COLUMNS too (issue 40): what the case's recorded conditions show
#: (analysis/model/causes.py words: its causes, causes.NOTHING, or "" where its file
#: recorded none); the conditions that drain the node on their own, found anywhere in the
#: file (node_conditions, "" for none); the file's `aborted` text ("" where it ran to its end).
CAUSE, CONDITION, ABORTED = "cause", "condition", "aborted"
#: The columns fleet_columns() gives beside COLUMNS, in order (load.py, summary.py).
EXTRA = (WORDS, SPREAD, CAUSE, CONDITION, ABORTED)
#: The cases tables read and the one metric each contributes (its median): the families of
#: src/core/families.def that name a cases metric.
FAMILIES: dict[str, tuple[str, bool]] = {
    name: (f.cases_metric, f.higher_is_better) for name, f in families.FAMILIES.items() if f.cases_metric}


#: The root attributes the fleet table reads.
ATTRIBUTES = ("host", "start_time", "topology", "arch", "synthetic", "gpu_uuids", "aborted",
              *conditions.ATTRIBUTES)


class Topo:
    """The facts of a topology that name components: GPU of a memory, socket of a node."""

    def __init__(self, topology: Mapping[str, Any]):
        self.topology = topology
        self.memories = {m["name"]: m for m in topology.get("memories", [])}
        gpus = [p for p in topology.get("processors", []) if p.get("kind") == "gpu"]
        self.gpu_link = {p["gpu"]: (p.get("link") or {}).get("type", "pcie") for p in gpus}
        self.gpu_host = {p["gpu"]: p.get("host_numa") for p in gpus}

    def gpu_of(self, name: str) -> int | None:
        """The GPU that ``name`` is (gpuN) or whose HBM it is (an HBM NUMA node)."""
        if name.startswith("gpu"):
            return int(name[3:])
        return gpu_of_memory(self.memories.get(name, {}))

    def link(self, gpu: int) -> str:
        """``link:c2c:gpuN`` or ``link:pcie:gpuN``: how GPU N reaches host memory."""
        kind = "c2c" if self.gpu_link.get(gpu) == "c2c" else "pcie"
        return f"link:{kind}:gpu{gpu}"


def _pair(kind: str, a: str, b: str) -> str:
    """A link between two ends, named the same whichever end reads."""
    first, second = sorted((a, b), key=lambda n: (len(n), n))
    return f"link:{kind}:{first}-{second}"


def _socket(name: str) -> str:
    return "cpu" + name[4:] if name.startswith("numa") else name


def component(topo: Topo, pu: str, mem: str, via: str) -> str:
    """The part a (processor, memory, path class) case measures; hops joined with ``+``.

    The rules follow docs/topology.md's path classes: ``local`` is the processor itself
    (its HBM, its socket's LPDDR), ``nvlink`` the GPU pair, ``c2c``/``pcie`` the GPU's host
    link, ``interconnect`` the socket pair."""
    pu_gpu, mem_gpu = topo.gpu_of(pu), topo.gpu_of(mem)
    gpu = pu_gpu if pu_gpu is not None else mem_gpu
    hops = []
    for token in filter(None, via.split("+")):
        if token == "local":
            hops.append(f"gpu{gpu}" if gpu is not None else _socket(pu))
        elif token == "nvlink" and pu_gpu is not None and mem_gpu is not None:
            hops.append(_pair("nvlink", f"gpu{pu_gpu}", f"gpu{mem_gpu}"))
        elif token in ("c2c", "pcie", "peer") and gpu is not None:
            hops.append(f"link:{'c2c' if token == 'c2c' else 'pcie'}:gpu{gpu}")
        elif token == "interconnect":
            hops.append(_interconnect(topo, pu, mem))
        else:
            hops.append(token)
    return "+".join(hops) or _socket(pu)


def _interconnect(topo: Topo, pu: str, mem: str) -> str:
    """The socket pair between the processor's socket and the memory's socket."""
    ends = []
    for name in (pu, mem):
        gpu = topo.gpu_of(name)
        host = topo.gpu_host.get(gpu) if gpu is not None else None
        if gpu is not None:  # a GPU's socket is its host NUMA node's
            ends.append(f"cpu{host}" if host is not None else f"gpu{gpu}")
        else:
            ends.append(_socket(name))
    return _pair("interconnect", *ends)


def _memcpy(row: Mapping[str, Any], topo: Topo) -> str:
    dst = int(row.get("dst_gpu", -1))
    if dst >= 0:
        return component(topo, f"gpu{row['gpu']}", f"gpu{dst}", row["via"])
    if int(row["gpu"]) < 0 or "," in str(row["via"]):
        return "node"  # every GPU at once: the node's aggregate
    return component(topo, f"gpu{row['gpu']}", f"numa{row['host_numa']}", row["via"])


def _pingpong(row: Mapping[str, Any], topo: Topo) -> str:
    a, b = row["a"], row["b"]
    gpus = [g for g in (topo.gpu_of(a), topo.gpu_of(b)) if g is not None]
    if len(set(gpus)) == 2:
        return _pair("nvlink", f"gpu{gpus[0]}", f"gpu{gpus[1]}")
    if gpus and (a.startswith("cpu") or b.startswith("cpu")):
        return topo.link(gpus[0])
    if gpus:
        return f"gpu{gpus[0]}"
    return a if a == b else _pair("interconnect", a, b)


def _processor_on_memory(row: Mapping[str, Any], topo: Topo) -> str:
    return component(topo, row["pu"], row["mem"], row["via"])


#: The component of a case row: a processor on a memory over its path (bw, chase: any family
#: with pu, mem and via columns), else its family's own rule.
COMPONENTS: dict[str, Callable[[Mapping[str, Any], Topo], str]] = {"memcpy": _memcpy, "pingpong": _pingpong}


def path_and_component(family: str, row: Mapping[str, Any], topo: Topo) -> tuple[str, str]:
    """A case row's path (case_paths.py) and the component of the node it measures."""
    return case_paths.PATHS[family](row), COMPONENTS.get(family, _processor_on_memory)(row, topo)


_LINK_WORDS = {"c2c": "{0}'s C2C", "pcie": "{0}'s PCIe", "nvlink": "NVLink {0}",
               "interconnect": "socket link {0}"}


def component_words(name: str) -> str:
    """``link:c2c:gpu0+link:interconnect:cpu0-cpu1`` -> ``gpu0's C2C + socket link cpu0-cpu1``."""
    words = []
    for hop in name.split("+"):
        parts = hop.split(":")
        known = len(parts) == 3 and parts[0] == "link" and parts[1] in _LINK_WORDS
        words.append(_LINK_WORDS[parts[1]].format(parts[2]) if known else hop)
    return " + ".join(words)


def words(family: str, row: Mapping[str, Any], topo: Topo, part: str) -> str:
    """The case in words (model/case_words.py, the report's words too), with the links of
    its component ``part`` where the path is not the processor's own memory."""
    return case_words(family, row, topo.topology, component_words(part))


def _fleet_columns(how: str) -> dict[str, tuple[str, ...]]:
    return {family: tuple(c.name for c in families.columns(f"{family}/cases") if c.fleet == how)
            for family in FAMILIES}


#: The case columns the paths and components read, by families.def's fleet field (the fleet reads only
#: these, the status and metric): those a file must have ("name"), and those read where it
#: has them ("name if present").
NAME_COLUMNS: dict[str, tuple[str, ...]] = _fleet_columns("name")
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = _fleet_columns("name if present")
# Alike nodes repeat the same cases: names are computed once per (topology, family, case).
_TOPOS: dict[str, tuple[int, Topo]] = {}
_NAMES: dict[tuple[Any, ...], tuple[str, str, str]] = {}


def node_kind(topology: Mapping[str, Any], arch: str = "") -> str:
    """``<arch>/<sockets>s/<gpus>x<model>``: nodes of one kind are compared with each other."""
    processors = topology.get("processors", [])
    sockets = socket_count(topology)  # a socket numa=fake split counts once
    models = [str(p.get("model", "")) for p in processors if p.get("kind") == "gpu"]
    gpus = "+".join(sorted(set(models))) or "none"
    return f"{topology.get('arch') or arch or 'unknown'}/{sockets}s/{len(models)}x{gpus}"


def night_of(attrs: Mapping[str, Any]) -> str:
    return str(attrs.get("start_time", ""))[:10]


def _topology_key(text: str, host: Any) -> str:
    """The topology text without its host name: a real node's topology names its host, and
    alike nodes would otherwise each get their own parse, Topo and case names."""
    return text.replace(json.dumps(str(host)), '""') if host else text


def _topo(run: Run) -> tuple[int, Topo]:
    text = str(run.attrs.get("topology") or json.dumps(run.topology, sort_keys=True))
    key = _topology_key(text, run.attrs.get("host"))
    if key not in _TOPOS:
        _TOPOS[key] = (len(_TOPOS), Topo(run.topology))
    return _TOPOS[key]


def fleet_rows(run: Run, night: str | None = None) -> pd.DataFrame:
    """The fleet table of one run (the module notes; columns in ``COLUMNS``)."""
    return pd.DataFrame(fleet_columns(run, night), columns=list(COLUMNS))


def fleet_columns(run: Run, night: str | None = None) -> dict[str, np.ndarray]:
    """fleet_rows() as one array per column, and WORDS: a fleet of thousands of files
    concatenates these once instead of thousands of small DataFrames."""
    topo = _topo(run)
    parts = [_family_columns(family, run.tables[f"{family}/cases"], topo)
             for family in FAMILIES if f"{family}/cases" in run.tables]
    columns = {name: np.concatenate([p[name] for p in parts]) if parts else
               np.array([], dtype=float if name in ("value", SPREAD) else object)
               for name in (*COLUMNS[3:10], WORDS, SPREAD, CAUSE, CONDITION)}
    rows = len(columns["value"])
    constants = {"night": night or night_of(run.attrs), "node": run.host,
                 "node_kind": node_kind(run.topology, str(run.attrs.get("arch", ""))),
                 "synthetic": bool(int(run.attrs.get("synthetic", 0) or 0)),
                 "gpu_uuids": _uuids(run.attrs.get("gpu_uuids")), ABORTED: str(run.attrs.get("aborted") or "")}
    columns.update({name: np.full(rows, value, dtype=bool if name == "synthetic" else object)
                    for name, value in constants.items()})
    return {name: columns[name] for name in (*COLUMNS, *EXTRA)}


def _uuids(value: Any) -> str:
    if value is None:
        return ""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


# The names of a whole cases table, by its identifying columns: alike nodes hold the same
# table, so a node costs one lookup and shares its name arrays with the others.
_TABLE_NAMES: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _table_names(family: str, cases: Mapping[str, Any],
                 topo: tuple[int, Topo]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(path, component, words) arrays of one cases table."""
    columns = [c for c in (*NAME_COLUMNS[family], *OPTIONAL_COLUMNS.get(family, ()))
               if c in cases]
    arrays = [np.asarray(cases[c]) for c in columns]
    key = (topo[0], family, tuple(columns),
           tuple(tuple(a.tolist()) if a.dtype == object else (a.dtype.str, a.tobytes())
                 for a in arrays))
    if key not in _TABLE_NAMES:
        named = _names(family, cases, topo)
        _TABLE_NAMES[key] = tuple(np.array([n[i] for n in named], dtype=object)
                                  for i in range(3))  # type: ignore[assignment]
    return _TABLE_NAMES[key]


def _names(family: str, cases: Mapping[str, Any],
           topo: tuple[int, Topo]) -> list[tuple[str, str, str]]:
    columns = [c for c in (*NAME_COLUMNS[family], *OPTIONAL_COLUMNS.get(family, ()))
               if c in cases]
    named = []
    for values in zip(*(cases[c].tolist() for c in columns)):
        key = (topo[0], family, values)
        if key not in _NAMES:
            row = dict(zip(columns, values))
            path, part = path_and_component(family, row, topo[1])
            _NAMES[key] = (path, part, words(family, row, topo[1], part))
        named.append(_NAMES[key])
    return named


def _family_columns(family: str, cases: Mapping[str, Any],
                    topo: tuple[int, Topo]) -> dict[str, np.ndarray]:
    metric, higher = FAMILIES[family]
    path, part, said = _table_names(family, cases, topo)
    status = np.asarray(cases["status"], dtype=object)
    values = np.array(cases[metric], dtype=float)
    values[status != "ok"] = np.nan
    rows = len(values)
    return {"family": np.full(rows, family, dtype=object),
            "path": path, "component": part, WORDS: said,
            "metric": np.full(rows, metric, dtype=object), "value": values, "status": status,
            "higher_is_better": np.full(rows, higher, dtype=bool),
            SPREAD: np.asarray(cases.get(SPREAD, np.full(rows, np.nan)), dtype=float),
            **{name: np.asarray(cases[name], dtype=object) if name in cases else np.full(rows, "", dtype=object)
               for name in (CAUSE, CONDITION)}}


def load_cases_run(path: Any) -> Run:
    """A Run holding only the root attributes and the columns of the FAMILIES' cases
    tables that the fleet table needs, each table a dict of arrays (not a DataFrame).

    A node's samples and most case columns are not needed, and reading them was most of
    the time of a fleet of thousands; the file is read through the one walk of a result
    file (results/h5file.py), whose one-line errors a damaged file raises."""
    path = Path(path)
    with walk(path) as root:
        attrs = {key: root.attribute(key) for key in ATTRIBUTES if root.has_attribute(key)}
        tables = {}
        for family in FAMILIES:
            cases = root.group(f"{family}/cases")
            if cases is not None:
                tables[f"{family}/cases"] = _read_columns(root, family, cases)
        topology = _parsed(path, attrs)
        if tables and "nvml" in attrs:
            _add_causes(root, attrs, topology, tables)
    if tables and not any(len(t["status"]) for t in tables.values()):
        raise RunFileError(f"{shown(path)}: its cases tables ({', '.join(tables)}) hold no case: a run ended "
                           "before its first case finished; valid: a result file with at least one case")
    return Run(path=path, name=path.stem, attrs=attrs, topology=topology,
               tables=tables)  # type: ignore[arg-type]


def _add_causes(root: Group, attrs: Mapping[str, Any], topology: Mapping[str, Any],
                tables: dict[str, dict[str, np.ndarray]]) -> None:
    """CAUSE and CONDITION of every case of a file that recorded its conditions."""
    recorded = conditions.of_group(root, attrs, topology)
    if recorded is None:
        return
    drain = "; ".join(c.text for c in causes.node_conditions(recorded))
    for name, columns in tables.items():
        group = root.group(name)
        ids = np.asarray(group.column("case_id"), dtype=np.int64) if group is not None and group.has("case_id") \
            else np.full(len(columns["status"]), -1)
        columns[CAUSE] = np.array([causes.words(causes.case_causes(recorded, int(i), name.partition("/")[0]))
                                   for i in ids.tolist()],
                                  dtype=object)
        columns[CONDITION] = np.full(len(ids), drain, dtype=object)


def _parsed(path: Path, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The topology attribute as JSON; alike nodes share one parse (their own host name
    put back), so a fleet of one kind parses it once."""
    text = str(attrs.get("topology") or "{}")
    host = attrs.get("host")
    key = _topology_key(text, host)
    if key in _TOPOS:
        shared = _TOPOS[key][1].topology
        return {**shared, "host": host} if "host" in shared else shared
    return parse_topology(path, text)


#: The columns that name a processor, which the fleet parses (a GPU's number, a socket's).
PROCESSOR_COLUMNS = frozenset({"pu", "a", "b"})
_PROCESSOR = re.compile(r"(cpu|gpu)[0-9]+|cpus")


def _processors(values: np.ndarray) -> set[str]:
    return {v for v in map(str, set(values)) if _PROCESSOR.fullmatch(v)}


def _read_columns(root: Group, family: str, cases: Group) -> dict[str, np.ndarray]:
    """The needed columns of one cases table, checked as io checks a whole table."""
    metric = FAMILIES[family][0]
    columns = cases.columns((*NAME_COLUMNS[family], "status", metric), OPTIONAL_COLUMNS.get(family, ()))
    for name in PROCESSOR_COLUMNS.intersection(columns):
        bad = sorted({str(v) for v in columns[name]} - _processors(columns[name]))
        if bad:
            raise RunFileError(f"{shown(root.path)}: column {name} of table {cases.name} names {one_line(bad[0])!r}, "
                               "not a processor; valid: cpuN, gpuN or cpus (docs/topology.md)")
    check_non_negative(root.path, cases.name, metric, columns[metric])
    columns[SPREAD] = _spread(root, family, cases, len(columns[metric]))
    return columns


#: Where each family's repetitions are: the samples table and its value column (one row a
#: repetition: bw and chase, a few rows a case), else the cases table's percentiles.
_SAMPLES = {"bw": "bandwidth_GBps", "chase": "ns_per_access"}


def _spread(root: Group, family: str, cases: Group, rows: int) -> np.ndarray:
    """SPREAD of each case. bw and chase from their samples (a few per case, cheap);
    ping-pong from p05/p95 (10,000 round trips a case are not read: (p95 - p05) / 3.29 is
    a normal's sigma); memcpy (several streams a repetition in its samples) from min/max
    over its repetitions, a range / d2(reps), the normal's sigma from a range of n."""
    spread = np.full(rows, np.nan)
    samples = root.group(f"{family}/samples") if family in _SAMPLES else None
    if samples is not None:
        if samples.has("case_id") and samples.has(_SAMPLES[family]):
            ids = np.asarray(samples.column("case_id"), dtype=np.int64)
            values = np.asarray(samples.column(_SAMPLES[family]), dtype=float)
            return _sample_spread(ids, values, rows)
    elif family == "pingpong" and all(cases.has(c) for c in ("p05_ns", "p95_ns", "median_ns")):
        p05, p95, median = (np.asarray(cases.column(c), dtype=float)
                            for c in ("p05_ns", "p95_ns", "median_ns"))
        with np.errstate(divide="ignore", invalid="ignore"):
            return (p95 - p05) / 3.29 / median
    elif all(cases.has(c) for c in ("min_GBps", "max_GBps", "median_GBps", "reps")):
        low, high, median = (np.asarray(cases.column(c), dtype=float)
                             for c in ("min_GBps", "max_GBps", "median_GBps"))
        reps = np.asarray(cases.column("reps"), dtype=np.int64)
        d2 = np.interp(reps, np.arange(2, 11), _D2, right=np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.where(reps >= 2, (high - low) / d2 / median, np.nan)
    return spread


# The expected range of n normal draws in sigmas (d2 of control charts), n = 2..10.
_D2 = [1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078]


def _sample_spread(ids: np.ndarray, values: np.ndarray, rows: int) -> np.ndarray:
    """1.4826 MAD / median of each case's samples, all cases at once (no groupby per file)."""
    spread = np.full(rows, np.nan)
    keep = (ids >= 0) & (ids < rows) & np.isfinite(values)
    ids, values = ids[keep], values[keep]
    if not len(ids):
        return spread
    median = grouped_medians(ids, values, rows)[2]
    mad = grouped_medians(ids, np.abs(values - median[ids]), rows)[2]
    counts = np.bincount(ids, minlength=rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(counts >= 2, MAD_SCALE * mad / median, np.nan)
    return spread
