"""Theoretical peak GB/s of a path: the slowest link or memory on its way.

A path (processor, memory) is classified by ``via`` (docs/topology.md). Its peak is the
minimum over the capacities of the memory and of the links that ``via`` names; each
capacity is one direction, decimal GB/s, and carries where it came from:
``discovered`` (from topology facts, e.g. PCIe generation and width read from sysfs),
``table`` (the model tables below) or ``user`` (a ``--peaks`` JSON file). Every table and
discovered figure also carries its ``citation``; one no source confirms is "assumed".

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

from ..errors import InputError
from ..results.sockets import socket_count, socket_of
from .vocabulary import gpu_of_memory, is_grace, on_gpu

# Where each figure comes from: a document (and URL) someone on the project read. A figure no
# source confirms starts its citation with ASSUMED and is shown as assumed wherever it or a
# % of peak built on it appears (docs/analysis.md lists them all).
ASSUMED = "assumed"
ALPS_PAPER = ("Fusco et al., Understanding Data Movement in Tightly Coupled Heterogeneous Systems: "
              "A Case Study with the Grace Hopper Superchip, https://arxiv.org/html/2408.11556v1")
CSCS_ALPS = ("CSCS Alps hardware docs, GH200 node schematic (github.com/eth-cscs/cscs-docs "
             "docs/alps/hardware.md, docs/images/alps/gh200-schematic.svg)")
GH200_DATASHEET = ("NVIDIA GH200 Grace Hopper Superchip data sheet, https://nvdam.widen.net/s/rrgqqnpbz8/"
                   "grace-datasheet-gh200-grace-hopper-superchip-3773000 (table as transcribed in "
                   "github.com/atineoSE/coding-model-seeks-gpu pipeline/pipeline/sources/gh200_specs.md)")
JUPITER = "JSC, JUPITER configuration, https://apps.fz-juelich.de/jsc/hps/jupiter/configuration.html"
H100_PCIE_BRIEF = ("NVIDIA H100 PCIe GPU product brief PB-11133-001_v02: memory bandwidth greater than "
                   "2,000 GB/s, https://manuals.plus/m/d4b5dc21484df3ba8fbe84918338461cc074a3fcebcc13423eadc2b10ac3bda4")
H100_NVL_SPECS = "AI Mining Co, H100 NVL specs, https://www.aiminingco.com/gpu/h100-nvl/specs"
H200_ANANDTECH = ("AnandTech, NVIDIA at SC23: H200 accelerator with HBM3e (spec table: 4.8TB/sec), "
                  "http://m.anandtech.com/Show/Index/21136?cPage=2&all=False&sort=0&page=1&slug="
                  "nvidia-at-sc23-h200-accelerator-with-hbm3e-and-jupiter-supercomputer-for-2024")
PCIE_RATES = ("PCIe rates and encodings per generation (gen5 x16 63.0 GB/s), "
              "https://hpc-notes.pages.dev/reference/pcie")


# Marks a % of a peak whose limiting figure is assumed, wherever one is shown.
ASSUMED_MARK = "†"
ASSUMED_NOTE = (f"{ASSUMED_MARK} % of an assumed peak: no published source confirms the figure "
                "that limits it (summary.md lists the peaks and their citations).")


def pct_text(pct: float, assumed: bool) -> str:
    """'45%', or '45%†' when the peak is assumed."""
    return f"{pct:.0f}%" + (ASSUMED_MARK if assumed else "")


@dataclass(frozen=True)
class Figure:
    """A table figure, GB/s one direction, and where it comes from."""

    gbps: float
    citation: str

    @property
    def assumed(self) -> bool:
        return self.citation.startswith(ASSUMED)


# HBM bandwidth by GPU model name (upper-cased substrings, first match wins; "GH200"
# contains "H200", so the GH200 rows come first).
HBM: tuple[tuple[tuple[str, ...], Figure], ...] = (
    (("GH200", "144G"), Figure(4900.0, f"GH200 144GB HBM3e 4.9 TB/s: {ALPS_PAPER}, Table I; {GH200_DATASHEET}")),
    (("GH200", "HBM3E"), Figure(4900.0, f"GH200 144GB HBM3e 4.9 TB/s: {ALPS_PAPER}, Table I; {GH200_DATASHEET}")),
    (("GH200",), Figure(4000.0, f"GH200 96GB HBM3 4 TB/s: {ALPS_PAPER}, Table I; {CSCS_ALPS}; {GH200_DATASHEET}")),
    (("H200",), Figure(4800.0, f"H200 141GB HBM3e 4.8 TB/s: {H200_ANANDTECH}")),
    (("H100", "PCIE"), Figure(2000.0, f"H100 PCIe 80GB HBM2e 2 TB/s: {ALPS_PAPER}, Table I; {H100_PCIE_BRIEF}")),
    (("H100", "NVL"), Figure(3900.0, f"H100 NVL 94GB HBM3 3.9 TB/s: {H100_NVL_SPECS}")),
    (("H100",), Figure(3350.0, f"H100 SXM 80GB HBM3 3.35 TB/s: {ALPS_PAPER}, Table I")),
)
# NVLink between two GPUs, per direction: links per pair x 25 GB/s (NVLink 4, Hopper). A
# Hopper SXM GPU or GH200 has 18 links; how many join one pair is fixed by the wiring, which
# the topology does not record, so nvlink_pair() states the assumption it takes:
# - GH200 (quad nodes such as CSCS Alps): the superchips of the board are wired directly,
#   each pair by its own links, 18 split evenly over the other superchips (quad: 3 x 6 links,
#   150 GB/s per pair). The board's superchips are its Grace sockets: a GPU the driver
#   fenced leaves its Grace, and its links to the survivors stay idle rather than moving to
#   them, so a quad that shows 3 GPUs still has 6 links per pair (not 18 over 2 peers).
# - H100/H200 SXM: an 8-GPU HGX board routes all 18 links through NVSwitch (450 per pair).
#   With fewer visible peers the board may be a 4-GPU direct mesh (6 per pair) or a part of
#   an NVSwitch board; the model takes NVSwitch, so a fraction of peak is never overstated.
# - H100 PCIe and H100 NVL: NVLink bridges, 600 GB/s both ways, 300 per direction.
NVLINK4_LINK_GBPS = 25.0
NVLINK4_LINKS_PER_GPU = 18
NVLINK4_CITATION = (f"Hopper: 18 NVLink 4 links at 25 GB/s per direction each, 450 GB/s per direction: "
                    f"{ALPS_PAPER}, sec. II-A3")
NVLINK_MESH_CITATION = (f"quad GH200: the 18 links split equally over 3 peers, 150 GB/s per direction per "
                        f"pair: {ALPS_PAPER}, sec. II-A4; {CSCS_ALPS} ('GPU All2all: 3x6 P2P NVLink "
                        f"150GB/s per direction'); {JUPITER}")
GH200_QUAD_SUPERCHIPS = 4
NVLINK_BRIDGE = Figure(300.0, f"H100 NVL/PCIe NVLink bridge, 600 GB/s both ways: {H100_NVL_SPECS}")
NVLINK_BRIDGED: tuple[tuple[str, ...], ...] = (("H100", "PCIE"), ("H100", "NVL"))
NVLINK_DIRECT_MESH: tuple[tuple[str, ...], ...] = (("GH200",),)
NVLINK_SWITCHED: tuple[tuple[str, ...], ...] = (("H200",), ("H100",))
C2C = Figure(450.0, f"NVLink-C2C 900 GB/s both ways, 450 GB/s per direction: {ALPS_PAPER}, sec. II-A1; "
                    f"{CSCS_ALPS}; {GH200_DATASHEET}")
# Grace LPDDR5X per socket. The data sheet gives two figures by module: up to 512 GB/s for
# 120/240 GB, up to 384 GB/s for 480 GB; the Alps paper and CSCS quote 500 for the 120 GB
# module. A node of more than LPDDR_480_BYTES is the 480 GB module.
GRACE_LPDDR5X = Figure(500.0, f"Grace LPDDR5X up to 500 GB/s: {ALPS_PAPER}, sec. II-A2; {CSCS_ALPS} "
                              f"('<=500GB/s'); the data sheet gives up to 512 for 120/240 GB modules")
GRACE_LPDDR5X_480 = Figure(384.0, f"Grace 480 GB LPDDR5X up to 384 GB/s: {GH200_DATASHEET}; {JUPITER} "
                                  f"(login node: '480 GB LPDDR5X memory at 384 GB/s')")
LPDDR_480_BYTES = 300 * 2**30
# The coherent Grace-to-Grace links between the superchips. Quad GH200 (CSCS Alps, four
# Grace sockets): CSCS's node schematic gives ~75 GB/s per direction (JSC's JUPITER page,
# another quad GH200 design, gives 100; override with {"link:interconnect": ...}). Other
# Grace nodes (dual GH200 workstation): no source found; 150 is kept as an assumption.
GRACE_QUAD_SOCKETS = 4
GRACE_INTERCONNECT_QUAD = Figure(75.0, f"quad GH200 Grace Interconnect ~75 GB/s per direction: {CSCS_ALPS} "
                                       f"('CPU All2all Grace Interconnect ~75GB/s per direction'); "
                                       f"{JUPITER} gives 100 GB/s per direction for its quad GH200 nodes")
GRACE_INTERCONNECT_OTHER = Figure(150.0, f"{ASSUMED}: no published Grace-Grace figure for this node "
                                         f"(the dual GH200 blog measured 112-133 GB/s across its superchips)")
# PCIe: GT/s per lane by generation; 8b/10b encoding for gen 1-2, 128b/130b after. Gen 6
# uses FLIT encoding, approximated by 128b/130b and so assumed.
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_GEN6_CITATION = f"{ASSUMED}: PCIe gen 6 FLIT encoding approximated by 128b/130b"

LINK_KINDS = ("pcie", "c2c", "nvlink", "interconnect")
_OVERRIDE_KEY = re.compile(r"(numa|gpu)\d+|link:(pcie|c2c|nvlink|interconnect)(:gpu\d+)?")


@dataclass(frozen=True)
class Capacity:
    """One memory or link: ``gbps`` is None when unknown (then ``source`` is None).

    ``source`` is the kind (discovered, table, user); ``citation`` the document behind the
    figure (None for user figures), starting with "assumed" where no source confirms it."""

    name: str
    gbps: float | None
    source: str | None
    citation: str | None = None

    @property
    def assumed(self) -> bool:
        return (self.citation or "").startswith(ASSUMED)


@dataclass(frozen=True)
class Peak:
    """Peak of a path: the limiting capacity, its source and citation, the unknown parts.

    ``assumed``: the limiting figure is an assumption, so is any % of this peak."""

    gbps: float | None
    source: str | None
    limit: str | None
    unknown: tuple[str, ...] = ()
    citation: str | None = None

    @property
    def assumed(self) -> bool:
        return (self.citation or "").startswith(ASSUMED)

    @classmethod
    def of(cls, limit: Capacity, unknown: tuple[str, ...], gbps: float | None = None) -> "Peak":
        """The peak ``limit`` sets (``gbps`` where a rule scales its figure)."""
        return cls(limit.gbps if gbps is None else gbps, limit.source, limit.name, unknown, limit.citation)


def pcie_gbps(gen: int, width: int) -> float | None:
    """One direction of a PCIe link in GB/s (gen 5 x16: 63.0); None when unknown."""
    if gen not in PCIE_GTS or width <= 0:
        return None
    encoding = 8 / 10 if gen <= 2 else 128 / 130
    return PCIE_GTS[gen] * width * encoding / 8


def pcie_citation(gen: int) -> str:
    return PCIE_GEN6_CITATION if gen == 6 else PCIE_RATES


def hbm_figure(model: str) -> Figure | None:
    upper = model.upper()
    return next((fig for keys, fig in HBM if all(k in upper for k in keys)), None)


def hbm_gbps(model: str) -> float | None:
    fig = hbm_figure(model)
    return fig.gbps if fig else None


@dataclass(frozen=True)
class NvlinkPair:
    """NVLink between one GPU and one peer: links, GB/s per direction, the wiring assumed."""

    links: int | None
    gbps: float | None
    assumption: str
    citation: str | None = None


def _matches(groups: tuple[tuple[str, ...], ...], model: str) -> bool:
    upper = model.upper()
    return any(all(k in upper for k in keys) for keys in groups)


def nvlink_pair(model: str, nvlink_peers: int, superchips: int | None = None) -> NvlinkPair:
    """NVLink per GPU pair of GPU ``model`` with ``nvlink_peers`` NVLink peers (module notes).

    ``superchips``: for a GH200, the superchips its board wires together (the node's Grace
    sockets), GPUs the driver fenced included; None when only the peers are known (then
    every superchip is taken to be visible: ``nvlink_peers + 1``). The links of a pair
    come from the board, never from how many peers are visible."""
    if _matches(NVLINK_BRIDGED, model):
        return NvlinkPair(None, NVLINK_BRIDGE.gbps, "NVLink bridge, 600 GB/s both ways",
                          NVLINK_BRIDGE.citation)
    if _matches(NVLINK_DIRECT_MESH, model) and nvlink_peers > 0:
        board = max(superchips or 0, nvlink_peers + 1)
        links = NVLINK4_LINKS_PER_GPU // (board - 1)
        # Published for the quad node (4 superchips); other boards split the links alike.
        citation = NVLINK_MESH_CITATION if board == GH200_QUAD_SUPERCHIPS else (
            f"{ASSUMED}: {NVLINK4_LINKS_PER_GPU} links split over {board - 1} peers; {NVLINK4_CITATION}")
        shown = "" if board == nvlink_peers + 1 else f" ({nvlink_peers} visible)"
        return NvlinkPair(links, links * NVLINK4_LINK_GBPS,
                          f"direct links: {NVLINK4_LINKS_PER_GPU} links over {board - 1} peers{shown}",
                          citation)
    if _matches(NVLINK_SWITCHED + NVLINK_DIRECT_MESH, model):
        # The per-GPU figure is published; all of it between one pair only through NVSwitch,
        # an upper bound where the wiring is not known.
        return NvlinkPair(NVLINK4_LINKS_PER_GPU, NVLINK4_LINKS_PER_GPU * NVLINK4_LINK_GBPS,
                          f"assumed NVSwitch: all {NVLINK4_LINKS_PER_GPU} links per pair", NVLINK4_CITATION)
    return NvlinkPair(None, None, f"unknown NVLink of {model or 'an unnamed GPU'}")


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
        self.grace = is_grace(topology)
        self.processors = {p["name"]: p for p in topology.get("processors", [])}
        self.memories = {m["name"]: m for m in topology.get("memories", [])}
        self.gpus = {p["gpu"]: p for p in self.processors.values() if p.get("kind") == "gpu"}
        self.vias = {(p["pu"], p["mem"]): p["via"] for p in topology.get("paths", [])}
        # A socket split by numa=fake is one socket (results/sockets.py): one processor, one
        # LPDDR module for all its nodes, no socket interconnect between them.
        self.socket_of = socket_of(topology)
        self.sockets = socket_count(topology)

    def _user(self, *keys: str) -> Capacity | None:
        for key in keys:
            if key in self.overrides:
                return Capacity(key, self.overrides[key], "user")
        return None

    @staticmethod
    def _table(name: str, fig: Figure | None, source: str = "table") -> Capacity:
        return Capacity(name, fig.gbps, source, fig.citation) if fig else Capacity(name, None, None)

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
        if kind == "host" and self.grace:
            # The socket's module: the nodes numa=fake split it into share it.
            parts = self._socket_memories(entry.get("numa")) or [entry]
            big = sum(int(m.get("bytes") or 0) for m in parts) > LPDDR_480_BYTES
            fig = GRACE_LPDDR5X_480 if big else GRACE_LPDDR5X
            if len(parts) > 1:
                names = ", ".join(m["name"] for m in parts)
                fig = Figure(fig.gbps, f"{fig.citation}; one module shared by {names} "
                                       f"(one socket split by numa=fake)")
            return self._table(name, fig)
        if on_gpu(kind) and gpu in self.gpus:
            return self._table(name, hbm_figure(str(self.gpus[gpu].get("model", ""))))
        return Capacity(name, None, None)

    def link(self, kind: str, gpu: int | None = None) -> Capacity:
        """Capacity of a link of ``kind`` (one of LINK_KINDS), of GPU ``gpu`` where it has one."""
        name = f"link:{kind}" + (f":gpu{gpu}" if gpu is not None else "")
        user = self._user(name, f"link:{kind}")
        if user:
            return user
        facts = self.gpus.get(gpu, {})
        model, link = str(facts.get("model", "")), facts.get("link") or {}
        if kind == "interconnect" and self.grace:
            quad = self.sockets == GRACE_QUAD_SOCKETS
            return self._table(name, GRACE_INTERCONNECT_QUAD if quad else GRACE_INTERCONNECT_OTHER)
        if kind == "c2c" and (gpu is None or link.get("type") == "c2c"):
            return self._table(name, C2C)
        if kind == "nvlink":
            # A GH200's board: its Grace sockets, which a fenced GPU leaves behind.
            pair = nvlink_pair(model, len(facts.get("nvlink_peers") or []),
                               self.sockets if self.grace else None)
            return self._table(name, Figure(pair.gbps, pair.citation or "") if pair.gbps else None)
        if kind == "pcie":
            gen = int(link.get("gen") or 0)
            gbps = pcie_gbps(gen, int(link.get("width") or 0))
            return self._table(name, Figure(gbps, pcie_citation(gen)) if gbps else None, "discovered")
        return Capacity(name, None, None)

    def _socket(self, numa: Any) -> Any:
        return self.socket_of.get(numa, numa)

    def _socket_memories(self, numa: Any) -> list[Mapping[str, Any]]:
        """The host memories of node ``numa``'s socket (itself alone unless numa=fake split it)."""
        return [m for m in self.memories.values() if m.get("kind") == "host"
                and (m.get("numa") == numa or self._socket(m.get("numa")) == self._socket(numa))]

    def _within_socket(self, pu: str, mem: str) -> bool:
        """``pu`` (a CPU node, or a GPU by its host node) and host memory ``mem`` are nodes of
        one socket split by numa=fake: topologies written before #33 name the way
        ``interconnect`` although no socket link is crossed."""
        entry, proc = self.memories.get(mem, {}), self.processors.get(pu, {})
        home = (proc.get("numa") if proc.get("kind") == "cpu"
                else self.gpus.get(proc.get("gpu"), {}).get("host_numa"))
        numa = entry.get("numa")
        return (entry.get("kind") == "host" and None not in (home, numa) and home != numa
                and self._socket(home) == self._socket(numa))

    def _gpu_of(self, name: str) -> int | None:
        """The GPU a processor is, or whose memory a memory is."""
        proc = self.processors.get(name)
        if proc is not None:
            return proc.get("gpu") if proc.get("kind") == "gpu" else None
        return gpu_of_memory(self.memories.get(name) or {})

    def _c2c_gpu_of_node(self, mem: str) -> int | None:
        """The GPU whose NVLink-C2C joins host memory ``mem``'s node (a GH200's Hopper)."""
        numa = self.memories.get(mem, {}).get("numa")
        return next((g for g, p in self.gpus.items()
                     if p.get("host_numa") == numa and (p.get("link") or {}).get("type") == "c2c"), None)

    def capacities(self, pu: str, mem: str, via: str | None = None) -> list[Capacity]:
        """The links ``via`` names (each GPU on the path contributes its own) and the memory.

        A GPU reaching a peer superchip's host memory (``nvlink+c2c``) crosses NVLink to the
        peer GPU, then the peer's C2C: both GPUs' NVLink, the peer's C2C only."""
        via = via or self.vias.get((pu, mem), "")
        tokens = [t for t in via.split("+") if t and t != "local"]
        if self._within_socket(pu, mem):
            tokens = [t for t in tokens if t != "interconnect"]
        ends = (self._gpu_of(pu), self._gpu_of(mem))
        gpus = list(dict.fromkeys(g for g in ends if g is not None))
        peer = self._c2c_gpu_of_node(mem) if "nvlink" in tokens and ends[1] is None else None
        on_way = {"nvlink": list(dict.fromkeys([*gpus, peer])), "c2c": [peer]} if peer is not None else {}
        result: list[Capacity] = []
        for token in tokens:
            kind = "pcie" if token == "peer" else token
            owners = on_way.get(kind, gpus)
            if kind == "interconnect" or not owners:
                result.append(self.link(kind))
            else:
                result.extend(self.link(kind, g) for g in owners)
        return [*result, self.memory(mem)]

    def path(self, pu: str, mem: str, via: str | None = None) -> Peak:
        """Peak of reading or writing ``mem`` from ``pu``; ``via`` defaults to the topology's."""
        parts = self.capacities(pu, mem, via)
        known = [c for c in parts if c.gbps is not None]
        unknown = tuple(c.name for c in parts if c.gbps is None)
        if not known:
            return Peak(None, None, None, unknown)
        return Peak.of(min(known, key=lambda c: c.gbps or 0.0), unknown)
