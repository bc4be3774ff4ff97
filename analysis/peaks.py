"""Theoretical peak GB/s of a path: the slowest link or memory on its way.

A path (processor, memory) is classified by ``via`` (docs/topology.md). Its peak is the
minimum over the capacities of the memory and of the links that ``via`` names; each
capacity is one direction, decimal GB/s, and carries where it came from:
``discovered`` (from topology facts, e.g. PCIe generation and width read from sysfs),
``table`` (the model tables below) or ``user`` (a ``--peaks`` JSON file).

A capacity that is not known (x86 socket memory, UPI) is left out of the minimum and
named in ``Peak.unknown``: the peak then bounds only the known parts, so a measured
fraction of it can only be understated, never overstated. docs/analysis.md lists the
tables and their sources.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError

# HBM bandwidth by GPU model name (upper-cased substrings, first match wins; "GH200"
# contains "H200", so the GH200 rows come first). NVIDIA data sheets.
HBM_GBPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("GH200", "144G"), 4900.0),   # GH200 144GB HBM3e
    (("GH200", "HBM3E"), 4900.0),
    (("GH200",), 4000.0),          # GH200 96GB HBM3 ("GH200 480GB", "GH200 120GB")
    (("H200",), 4800.0),           # H200 141GB HBM3e
    (("H100", "PCIE"), 2000.0),    # H100 PCIe 80GB HBM2e
    (("H100", "NVL"), 3900.0),     # H100 NVL 94GB HBM3
    (("H100",), 3350.0),           # H100 SXM5 80GB HBM3
)
# NVLink between two GPUs, per direction: links per pair x 25 GB/s (NVLink 4, Hopper). A
# Hopper SXM GPU or GH200 has 18 links; how many join one pair depends on the wiring, which
# the topology does not record, so nvlink_pair() states the assumption it takes:
# - GH200 (quad nodes such as CSCS Alps): the superchips are wired directly, the 18 links
#   split evenly over the NVLink peers (3 peers: 6 links, 150 GB/s per pair).
# - H100/H200 SXM: an 8-GPU HGX board routes all 18 links through NVSwitch (450 per pair).
#   With fewer visible peers the board may be a 4-GPU direct mesh (6 per pair) or a part of
#   an NVSwitch board; the model takes NVSwitch, so a fraction of peak is never overstated.
# - H100 PCIe and H100 NVL: NVLink bridges, 600 GB/s both ways, 300 per direction.
NVLINK4_LINK_GBPS = 25.0
NVLINK4_LINKS_PER_GPU = 18
NVLINK_BRIDGE_GBPS = 300.0
NVLINK_BRIDGED: tuple[tuple[str, ...], ...] = (("H100", "PCIE"), ("H100", "NVL"))
NVLINK_DIRECT_MESH: tuple[tuple[str, ...], ...] = (("GH200",),)
NVLINK_SWITCHED: tuple[tuple[str, ...], ...] = (("H200",), ("H100",))
C2C_GBPS = 450.0             # NVLink-C2C: 900 GB/s both ways, 450 per direction
GRACE_LPDDR5X_GBPS = 500.0   # per Grace socket (data sheet: up to 500-512 GB/s)
# Assumption: the coherent Grace-to-Grace links between the superchips of a quad GH200
# node (CSCS Alps) carry about 150 GB/s per direction, the figure quoted for GH200
# chip-to-chip traffic in the node's documentation; not checked against a data sheet or a
# measurement. Override it with {"link:interconnect": ...} when known.
GRACE_INTERCONNECT_GBPS = 150.0
# PCIe: GT/s per lane by generation; 8b/10b encoding for gen 1-2, 128b/130b after.
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

LINK_KINDS = ("pcie", "c2c", "nvlink", "interconnect")
_OVERRIDE_KEY = re.compile(r"(numa|gpu)\d+|link:(pcie|c2c|nvlink|interconnect)(:gpu\d+)?")


@dataclass(frozen=True)
class Capacity:
    """One memory or link: ``gbps`` is None when unknown (then ``source`` is None)."""

    name: str
    gbps: float | None
    source: str | None


@dataclass(frozen=True)
class Peak:
    """Peak of a path: the limiting capacity, its source and the unknown parts."""

    gbps: float | None
    source: str | None
    limit: str | None
    unknown: tuple[str, ...] = ()


def pcie_gbps(gen: int, width: int) -> float | None:
    """One direction of a PCIe link in GB/s (gen 5 x16: 63.0); None when unknown."""
    if gen not in PCIE_GTS or width <= 0:
        return None
    encoding = 8 / 10 if gen <= 2 else 128 / 130
    return PCIE_GTS[gen] * width * encoding / 8


def _by_model(table: tuple[tuple[tuple[str, ...], float], ...], model: str) -> float | None:
    upper = model.upper()
    return next((gbps for keys, gbps in table if all(k in upper for k in keys)), None)


def hbm_gbps(model: str) -> float | None:
    return _by_model(HBM_GBPS, model)


@dataclass(frozen=True)
class NvlinkPair:
    """NVLink between one GPU and one peer: links, GB/s per direction, the wiring assumed."""

    links: int | None
    gbps: float | None
    assumption: str


def _matches(groups: tuple[tuple[str, ...], ...], model: str) -> bool:
    upper = model.upper()
    return any(all(k in upper for k in keys) for keys in groups)


def nvlink_pair(model: str, nvlink_peers: int) -> NvlinkPair:
    """NVLink per GPU pair of GPU ``model`` with ``nvlink_peers`` NVLink peers (module notes)."""
    if _matches(NVLINK_BRIDGED, model):
        return NvlinkPair(None, NVLINK_BRIDGE_GBPS, "NVLink bridge, 600 GB/s both ways")
    if _matches(NVLINK_DIRECT_MESH, model) and nvlink_peers > 0:
        links = NVLINK4_LINKS_PER_GPU // nvlink_peers
        return NvlinkPair(links, links * NVLINK4_LINK_GBPS,
                          f"direct links: {NVLINK4_LINKS_PER_GPU} links over {nvlink_peers} peers")
    if _matches(NVLINK_SWITCHED + NVLINK_DIRECT_MESH, model):
        return NvlinkPair(NVLINK4_LINKS_PER_GPU, NVLINK4_LINKS_PER_GPU * NVLINK4_LINK_GBPS,
                          f"assumed NVSwitch: all {NVLINK4_LINKS_PER_GPU} links per pair")
    return NvlinkPair(None, None, f"unknown NVLink of {model or 'an unnamed GPU'}")


def nvlink_gbps(model: str, nvlink_peers: int = 0) -> float | None:
    return nvlink_pair(model, nvlink_peers).gbps


def load_overrides(path: str | Path) -> dict[str, float]:
    """A ``--peaks`` file: {"numa0": 300, "link:pcie": 64, "link:c2c:gpu1": 400, ...}."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError:
        raise InputError(f"{path}: cannot read the peaks file") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: the peaks file is not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise InputError(f'{path}: the peaks file must be a JSON object such as {{"numa0": 300}}')
    for key, value in data.items():
        if not _OVERRIDE_KEY.fullmatch(key):
            raise InputError(f"{path}: unknown peak key {key!r}; valid: numaN, gpuN, "
                             f"link:KIND or link:KIND:gpuN with KIND in {', '.join(LINK_KINDS)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise InputError(f"{path}: peak {key!r} must be a positive number of GB/s")
    return {key: float(value) for key, value in data.items()}


class PeakModel:
    """Link-capacity model of one node, from its topology JSON and user overrides."""

    def __init__(self, topology: Mapping[str, Any], overrides: Mapping[str, float] | None = None):
        self.overrides = dict(overrides or {})
        self.grace = "GRACE" in str(topology.get("cpu_model", "")).upper()
        self.processors = {p["name"]: p for p in topology.get("processors", [])}
        self.memories = {m["name"]: m for m in topology.get("memories", [])}
        self.gpus = {p["gpu"]: p for p in self.processors.values() if p.get("kind") == "gpu"}
        self.vias = {(p["pu"], p["mem"]): p["via"] for p in topology.get("paths", [])}

    def _user(self, *keys: str) -> Capacity | None:
        for key in keys:
            if key in self.overrides:
                return Capacity(key, self.overrides[key], "user")
        return None

    def memory(self, name: str) -> Capacity:
        """Capacity of memory ``name`` (numaN or gpuN); HBM by the model of its GPU."""
        entry = self.memories.get(name, {})
        kind, gpu = entry.get("kind"), entry.get("gpu")
        # numaN of an HBM node and gpuN are the same HBM: an override of either applies.
        alias = (f"gpu{gpu}" if kind == "hbm" else
                 f"numa{entry['numa']}" if kind == "device" and entry.get("numa") is not None
                 else name)
        user = self._user(name, alias)
        if user:
            return user
        if kind == "host":
            return Capacity(name, GRACE_LPDDR5X_GBPS if self.grace else None,
                            "table" if self.grace else None)
        if kind in ("hbm", "device") and gpu in self.gpus:
            gbps = hbm_gbps(str(self.gpus[gpu].get("model", "")))
            return Capacity(name, gbps, "table" if gbps else None)
        return Capacity(name, None, None)

    def link(self, kind: str, gpu: int | None = None) -> Capacity:
        """Capacity of a link of ``kind`` (one of LINK_KINDS), of GPU ``gpu`` where it has one."""
        name = f"link:{kind}" + (f":gpu{gpu}" if gpu is not None else "")
        user = self._user(name, f"link:{kind}")
        if user:
            return user
        facts = self.gpus.get(gpu, {})
        model, link = str(facts.get("model", "")), facts.get("link") or {}
        gbps: float | None = None
        source = "table"
        if kind == "interconnect":
            gbps = GRACE_INTERCONNECT_GBPS if self.grace else None
        elif kind == "c2c" and (gpu is None or link.get("type") == "c2c"):
            gbps = C2C_GBPS
        elif kind == "nvlink":
            gbps = nvlink_gbps(model, len(facts.get("nvlink_peers") or []))
        elif kind == "pcie":
            gbps = pcie_gbps(int(link.get("gen") or 0), int(link.get("width") or 0))
            source = "discovered"
        return Capacity(name, gbps, source if gbps else None)

    def _gpu_of(self, name: str) -> int | None:
        """The GPU a processor is, or whose memory a memory is."""
        entry = self.processors.get(name) or self.memories.get(name) or {}
        return entry.get("gpu") if entry.get("kind") in ("gpu", "hbm", "device") else None

    def capacities(self, pu: str, mem: str, via: str | None = None) -> list[Capacity]:
        """The links ``via`` names (each GPU on the path contributes its own) and the memory."""
        via = via or self.vias.get((pu, mem), "")
        ends = (self._gpu_of(pu), self._gpu_of(mem))
        gpus = list(dict.fromkeys(g for g in ends if g is not None))
        result: list[Capacity] = []
        for token in filter(None, via.split("+")):
            if token == "local":
                continue
            kind = "pcie" if token == "peer" else token
            if kind == "interconnect" or not gpus:
                result.append(self.link(kind))
            else:
                result.extend(self.link(kind, g) for g in gpus)
        return [*result, self.memory(mem)]

    def path(self, pu: str, mem: str, via: str | None = None) -> Peak:
        """Peak of reading or writing ``mem`` from ``pu``; ``via`` defaults to the topology's."""
        parts = self.capacities(pu, mem, via)
        known = [c for c in parts if c.gbps is not None]
        unknown = tuple(c.name for c in parts if c.gbps is None)
        if not known:
            return Peak(None, None, None, unknown)
        limit = min(known, key=lambda c: c.gbps or 0.0)
        return Peak(limit.gbps, limit.source, limit.name, unknown)
