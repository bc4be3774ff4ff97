"""The fleet table: one tidy row per (node, path, metric) of a result file.

This is the shared interface of issue #11 (docs/fleet.md): the fleet analysis and the
history database read exactly these columns. A ``path`` names a case without the values
that differ between alike nodes (the GPU grid's thread count follows the SM count), so
that the same path on every node of a kind can be compared; ``component`` names the part
of the node the path measures, so that a deviation can be blamed on a GPU, a socket or a
link.
"""
from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import Any

import h5py
import numpy as np
import pandas as pd

from .io import Run, RunFileError, _decode, _open, _read_table, shown

COLUMNS = ("night", "node", "node_kind", "family", "path", "component", "metric", "value",
           "status", "higher_is_better", "synthetic", "gpu_uuids")
#: The cases tables read and the one metric each contributes (its median).
FAMILIES: dict[str, tuple[str, bool]] = {
    "bw": ("median_GBps", True),
    "memcpy": ("median_GBps", True),
    "chase": ("median_ns", False),
    "pingpong": ("median_ns", False),
}


class Topo:
    """The facts of a topology that name components: GPU of a memory, socket of a node."""

    def __init__(self, topology: Mapping[str, Any]):
        self.memories = {m["name"]: m for m in topology.get("memories", [])}
        gpus = [p for p in topology.get("processors", []) if p.get("kind") == "gpu"]
        self.gpu_link = {p["gpu"]: (p.get("link") or {}).get("type", "pcie") for p in gpus}
        self.gpu_host = {p["gpu"]: p.get("host_numa") for p in gpus}

    def gpu_of(self, name: str) -> int | None:
        """The GPU that ``name`` is (gpuN) or whose HBM it is (an HBM NUMA node)."""
        if name.startswith("gpu"):
            return int(name[3:])
        entry = self.memories.get(name, {})
        return entry.get("gpu") if entry.get("kind") in ("hbm", "device") else None

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


def _bw(row: Mapping[str, Any], topo: Topo) -> tuple[str, str]:
    threads = -1 if row["pu_kind"] == "gpu" else row["threads"]
    dst = f" dst={row['dst_mem']} dst_alloc={row['dst_alloc']}" if row["dst_mem"] else ""
    noise = f" noise={row['noise']}" if row.get("noise") else ""
    path = (f"bw {row['op']} pu={row['pu']} mem={row['mem']} alloc={row['alloc']}{dst} "
            f"kernel={row['kernel']} threads={threads} size={row['size_bytes']}{noise}")
    return path, component(topo, row["pu"], row["mem"], row["via"])


def _memcpy(row: Mapping[str, Any], topo: Topo) -> tuple[str, str]:
    path = (f"memcpy {row['direction']} gpus={row['gpus']} host_numa={row['host_numa']} "
            f"alloc={row['alloc']} engine={row['engine']} mode={row['mode']} "
            f"size={row['size_bytes']}")
    dst = int(row.get("dst_gpu", -1))
    if dst >= 0:
        return path, component(topo, f"gpu{row['gpu']}", f"gpu{dst}", row["via"])
    if int(row["gpu"]) < 0 or "," in str(row["via"]):
        return path, "node"  # every GPU at once: the node's aggregate
    return path, component(topo, f"gpu{row['gpu']}", f"numa{row['host_numa']}", row["via"])


def _chase(row: Mapping[str, Any], topo: Topo) -> tuple[str, str]:
    path = (f"chase pu={row['pu']} mem={row['mem']} alloc={row['alloc']} "
            f"pattern={row['pattern']} size={row['size_bytes']} line={row['line_bytes']}")
    return path, component(topo, row["pu"], row["mem"], row["via"])


def _pingpong(row: Mapping[str, Any], topo: Topo) -> tuple[str, str]:
    a, b, mem = row["a"], row["b"], row["mem"]
    path = f"pingpong a={a} b={b} mem={mem} alloc={row['alloc']}"
    gpus = [g for g in (topo.gpu_of(a), topo.gpu_of(b)) if g is not None]
    if len(set(gpus)) == 2:
        return path, _pair("nvlink", f"gpu{gpus[0]}", f"gpu{gpus[1]}")
    if gpus and (a.startswith("cpu") or b.startswith("cpu")):
        return path, topo.link(gpus[0])
    if gpus:
        return path, f"gpu{gpus[0]}"
    return path, a if a == b else _pair("interconnect", a, b)


NAMERS: dict[str, Callable[[Mapping[str, Any], Topo], tuple[str, str]]] = {
    "bw": _bw, "memcpy": _memcpy, "chase": _chase, "pingpong": _pingpong}


def node_kind(topology: Mapping[str, Any], arch: str = "") -> str:
    """``<arch>/<sockets>s/<gpus>x<model>``: nodes of one kind are compared with each other."""
    processors = topology.get("processors", [])
    sockets = sum(1 for p in processors if p.get("kind") == "cpu" and p.get("numa") is not None)
    models = [str(p.get("model", "")) for p in processors if p.get("kind") == "gpu"]
    gpus = "+".join(sorted(set(models))) or "none"
    return f"{topology.get('arch') or arch or 'unknown'}/{sockets}s/{len(models)}x{gpus}"


def night_of(attrs: Mapping[str, Any]) -> str:
    return str(attrs.get("start_time", ""))[:10]


def fleet_rows(run: Run, night: str | None = None) -> pd.DataFrame:
    """The fleet table of one run (the module notes; columns in ``COLUMNS``)."""
    topo = Topo(run.topology)
    parts = [_family_rows(family, run.tables[f"{family}/cases"], topo)
             for family in FAMILIES if f"{family}/cases" in run.tables]
    table = (pd.concat(parts, ignore_index=True) if parts else
             pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS[3:10]}))
    table.insert(0, "night", night or night_of(run.attrs))
    table.insert(1, "node", run.host)
    table.insert(2, "node_kind", node_kind(run.topology, str(run.attrs.get("arch", ""))))
    table["synthetic"] = bool(int(run.attrs.get("synthetic", 0) or 0))
    table["gpu_uuids"] = _uuids(run.attrs.get("gpu_uuids"))
    return table[list(COLUMNS)]


def _uuids(value: Any) -> str:
    if value is None:
        return ""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _family_rows(family: str, cases: pd.DataFrame, topo: Topo) -> pd.DataFrame:
    metric, higher = FAMILIES[family]
    named = [NAMERS[family](row, topo) for row in cases.to_dict("records")]
    values = cases[metric].to_numpy(dtype=float, copy=True)
    values[cases["status"].to_numpy() != "ok"] = np.nan
    return pd.DataFrame({"family": family, "path": [p for p, _ in named],
                         "component": [c for _, c in named], "metric": metric,
                         "value": values, "status": cases["status"].to_numpy(),
                         "higher_is_better": higher})


def load_cases_run(path: Any) -> Run:
    """A Run holding only the root attributes and the cases tables of FAMILIES.

    Reading a node's samples is most of a file's bytes and the fleet does not need them;
    validation and the one-line errors are io's (a damaged file raises RunFileError)."""
    path = Path(path)
    with _open(path) as handle:
        try:
            attrs = {key: _decode(value) for key, value in handle.attrs.items()}
            tables = {f"{f}/cases": _read_table(path, handle[f"{f}/cases"])
                      for f in FAMILIES if isinstance(handle.get(f"{f}/cases"), h5py.Group)}
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            raise RunFileError(f"{shown(path)}: cannot be read ({error}); the file is damaged, "
                               "give an intact mempath result file") from None
    try:
        topology = json.loads(attrs.get("topology") or "{}")
    except json.JSONDecodeError as error:
        raise RunFileError(f"{shown(path)}: the topology attribute is not valid JSON ({error})") from None
    return Run(path=path, name=path.stem, attrs=attrs, topology=topology, tables=tables)

