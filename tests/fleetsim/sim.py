"""A fleet simulator: N synthetic nodes of one topology with noise and injected faults.

For tests and benchmarks of the fleet analysis only (docs/fleet.md). Every file carries
the root attribute ``synthetic`` = 1, so it is never taken for a measurement. Nominal
values are model values, not measurements: a bandwidth is the PeakModel peak of its path
(analysis/model/peaks.py) x EFFICIENCY; a latency is a LATENCY_NS constant of its kind plus
HOP_NS per link crossed. A capacity fault (hbm, c2c, channel) lowers a capacity of the model
and the path's peak is recomputed, so it shows only on the paths it really limits; a link
fault (nvlink, interconnect, memcpy, latency) changes every case whose component crosses it.

Layouts: ``node`` writes one file a node (DIR/<host>.h5); ``preset`` writes the vetting
preset's files (DIR/<host>/bw.h5, copy/<pu>.h5, ..., plan.json) with exactly the cases
slurm/vet_node.sh plans (tests/fleetsim/preset.py). Noise: lognormal (CASE_SIGMA between
nodes, SAMPLE_SIGMA between repetitions), or a fitted model of real run-to-run residuals
(tests/fleetsim/noise.py) on top of the nodes' own lasting CASE_SIGMA. Every node draws
from its own generator (seed, node, pass), so nodes can be written in parallel and a
retest pass (simulate_retest) draws fresh noise for the same node, its faults kept.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from analysis.errors import InputError
from analysis.fleet import retest_list
from analysis.fleet.load import write_summary
from analysis.fleet.table import Topo, path_and_component
from analysis.model.peaks import PeakModel
from analysis.results.h5writer import column, write_result

from . import noise as noise_model
from . import reads
from .preset import load_preset

REPO = Path(__file__).resolve().parents[2]
EFFICIENCY = 0.85          # achieved / peak of a healthy path (measured paths reach 0.8-0.9)
UNKNOWN_PEAK_GBPS = 200.0  # assumed where the model has no capacity (x86 socket memory)
CASE_SIGMA = 0.008         # lognormal spread of a case's level between healthy nodes
SAMPLE_SIGMA = 0.01        # lognormal spread of the repetitions within a case
REPS = 7
SIZE = 1 << 30
# Model latencies (ns) of the vetting preset's chase and ping-pong cases, GH200-like.
LATENCY_NS = {"chase cpu": 120.0, "chase gpu": 650.0, "pingpong cpu-cpu": 450.0,
              "pingpong cpu-gpu": 1300.0, "pingpong gpu-gpu": 2200.0}
# Added latency (ns) per link a chase or ping-pong crosses (the preset's remote chases).
HOP_NS = {"local": 0.0, "interconnect": 100.0, "c2c": 250.0, "nvlink": 300.0, "pcie": 600.0,
          "peer": 600.0}
LAYOUTS = ("node", "preset")
#: The host name written into a file template, replaced by each node's (nidNNNNNN: as long).
TEMPLATE_HOST = "nid#HOST#"
#: Fault kinds: their default size and what the size means.
FAULTS = {
    "hbm": 0.10,      # a GPU's HBM bandwidth lowered by this fraction
    "c2c": 0.5,       # a C2C link's width lost (0.5: half width)
    "channel": 0.125,  # a socket's LPDDR bandwidth lost (1/8: one of 8 channels)
    "noisy": 10.0,    # the node's noise multiplied by this
    "numa": 1.0,      # a NUMA node missing: its cases skipped
    "failed": 1.0,    # the node failed: no file (even count) or every case failed (odd)
    "nvlink": 0.10,   # an NVLink pair's bandwidth lowered by this fraction (every case over it)
    "interconnect": 0.10,  # a socket link's (Grace link's) bandwidth lowered
    "memcpy": 0.10,   # a GPU's copy engines (its H2D/D2H/D2D copies) slower by this fraction
    "latency": 0.10,  # latency of every chase and ping-pong over one component +this fraction
    "partial": 1.0,   # one file cut after some cases (a killed run)
    "truncated": 0.5,  # one file's bytes cut to this fraction (unreadable)
    "nofile": 1.0,    # one file of the node missing (the whole file in --layout node)
}
#: The path class each fault kind is counted in (truth.json; the detection study).
PATH_CLASS = {"hbm": "HBM", "channel": "LPDDR", "c2c": "C2C", "nvlink": "NVLink",
              "interconnect": "Grace link", "memcpy": "PCIe/memcpy", "latency": "latency",
              "partial": "file", "truncated": "file", "nofile": "file", "noisy": "noise",
              "numa": "NUMA node", "failed": "node"}
CAPACITY = ("hbm", "c2c", "channel")
LINK = ("nvlink", "interconnect", "memcpy", "latency")
INTEGRITY = ("partial", "truncated", "nofile")
STR = h5py.string_dtype("utf-8")


@dataclass
class Fault:
    node: str
    kind: str
    component: str
    size: float
    detail: str = ""
    path_class: str = ""


@dataclass
class Case:
    """One case of the preset: its static columns and how to value it."""

    family: str
    columns: dict[str, Any]
    pu: str = ""
    mem: str = ""
    via: str = ""
    latency: float = 0.0
    numas: tuple[int, ...] = ()  # NUMA nodes the case needs
    file: str = ""        # the preset's file (bw.h5, copy/cpu0.h5); "" for --layout node
    status: str = "ok"    # the plan's: skipped cases are written as skipped
    reason: str = ""
    path: str = ""        # the fleet table's path and component (table.path_and_component)
    component: str = ""
    noise_class: str = ""


@dataclass
class Plan:
    topology: dict[str, Any]
    cases: list[Case] = field(default_factory=list)


def load_topology(fixture: str) -> dict[str, Any]:
    """The topology of ``fixture``: tests/python/data/topology_NAME.json, else the CPU-only
    binary (MEMPATH_BIN) reading tests/fixtures/NAME."""
    saved = REPO / "tests" / "python" / "data" / f"topology_{fixture}.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    folder = REPO / "tests" / "fixtures" / fixture
    binary = os.environ.get("MEMPATH_BIN")
    if folder.is_dir() and binary:
        done = subprocess.run([binary, "topo", "--from", str(folder), "--json"],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return json.loads(done.stdout)
    known = sorted(p.stem[len("topology_"):] for p in saved.parent.glob("topology_*.json"))
    raise InputError(f"unknown fixture {fixture!r}; valid: {', '.join(known)} (or a "
                     "tests/fixtures folder with MEMPATH_BIN set to a mempath binary)")


def _numa(name: str) -> tuple[int, ...]:
    return (int(name[4:]),) if name.startswith("numa") and name[4:].isdigit() else ()


def _host_numas(topology: Mapping[str, Any]) -> set[int]:
    return {m["numa"] for m in topology.get("memories", []) if m.get("kind") == "host"}


def plan(topology: dict[str, Any], allocs: Mapping[str, str]) -> Plan:
    """The vetting preset of one node kind: every (processor, memory) read, with the
    allocator the binary plans for it (``allocs``: reads.load), host copies and GPU<->GPU
    copies, one chase per processor and a few ping-pongs."""
    processors = {p["name"]: p for p in topology.get("processors", [])}
    gpus = [p for p in processors.values() if p.get("kind") == "gpu"]
    hosts = sorted(_host_numas(topology))
    return Plan(topology, [*_bw_cases(topology, processors, allocs), *_memcpy_cases(gpus, hosts),
                           *_chase_cases(processors.values()), *_pingpong_cases(gpus, hosts)])


def _bw_cases(topology: Mapping[str, Any], processors: Mapping[str, Any],
              allocs: Mapping[str, str]) -> list[Case]:
    cpu_kernel = "neon" if topology.get("arch") == "aarch64" else "avx2"
    vias = {(p["pu"], p["mem"]): p["via"] for p in topology.get("paths", [])}
    cases = []
    for pu, mem in reads.read_paths(topology):
        via, alloc = vias[pu, mem], allocs[f"{pu} {mem}"]
        facts = processors.get(pu, {})
        gpu = facts.get("kind") == "gpu"
        threads = int(facts.get("sm_count", 0)) * 2048 if gpu else int(facts.get("cores", 1))
        cases.append(Case("bw", {
            "op": "read", "pu": pu, "pu_kind": "gpu" if gpu else "cpu", "mem": mem,
            "alloc": alloc, "kernel": "grid" if gpu else cpu_kernel, "threads": threads,
            "via": via}, pu, mem, via,
            numas=_numa(f"numa{facts['numa']}" if facts.get("numa") is not None else "") + _numa(mem)))
    return cases


def _memcpy_cases(gpus: Sequence[Mapping[str, Any]], hosts: Sequence[int]) -> list[Case]:
    cases = []
    for p in gpus:
        host = p.get("host_numa", hosts[0] if hosts else 0)
        for direction in ("h2d", "d2h"):
            cases.append(Case("memcpy", {
                "direction": direction, "gpu": p["gpu"], "gpus": str(p["gpu"]),
                "host_numa": host, "cpu_numa": host, "alloc": "pinned", "dst_gpu": -1},
                p["name"], f"numa{host}", numas=(host,)))
        cases.extend(Case("memcpy", {
            "direction": "d2d", "gpu": p["gpu"], "gpus": f"{p['gpu']},{q['gpu']}",
            "host_numa": -1, "cpu_numa": host, "alloc": "device", "dst_gpu": q["gpu"]},
            p["name"], q["name"]) for q in gpus if q is not p)
    return cases


def _chase_cases(processors: Any) -> list[Case]:
    cases = []
    for p in processors:
        gpu = p.get("kind") == "gpu"
        if not gpu and p.get("numa") is None:  # "cpus", all sockets at once
            continue
        mem = p["name"] if gpu else f"numa{p['numa']}"
        cases.append(Case("chase", {
            "pu": p["name"], "cpu": -1 if gpu else p["cpus"][0], "mem": mem,
            "alloc": "device" if gpu else "numa", "via": "local"},
            latency=LATENCY_NS["chase gpu" if gpu else "chase cpu"], numas=_numa(mem)))
    return cases


def _pingpong_cases(gpus: Sequence[Mapping[str, Any]], hosts: Sequence[int]) -> list[Case]:
    first = hosts[0] if hosts else 0
    cases = []
    for other in [f"cpu{n}" for n in hosts[1:]] + [p["name"] for p in gpus]:
        kind = "cpu-gpu" if other.startswith("gpu") else "cpu-cpu"
        cases.append(Case("pingpong", {
            "a": f"cpu{first}", "b": other, "mem": f"numa{first}", "alloc": "pinned"},
            latency=LATENCY_NS[f"pingpong {kind}"],
            numas=(first,) + _numa(other.replace("cpu", "numa"))))
    cases.extend(Case("pingpong", {"a": gpus[0]["name"], "b": p["name"], "mem": p["name"],
                                   "alloc": "device"}, latency=LATENCY_NS["pingpong gpu-gpu"])
                 for p in gpus[1:])
    return cases


def parse_faults(spec: str) -> list[tuple[str, list[float]]]:
    """``KIND:COUNT[@SIZE[/SIZE...]],...``: COUNT nodes of each kind, sizes cycled."""
    result: list[tuple[str, list[float]]] = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        kind, _, rest = item.partition(":")
        count, _, sizes = rest.partition("@")
        try:
            if kind not in FAULTS or int(count) < 0:
                raise ValueError
            values = [float(s) for s in sizes.split("/")] if sizes else [FAULTS[kind]]
            if any(v <= 0 for v in values):
                raise ValueError
        except ValueError:
            raise InputError(f"--faults item {item!r} is not KIND:COUNT[@SIZE[/SIZE...]] with "
                             f"KIND in {', '.join(FAULTS)}, COUNT >= 0 and sizes > 0") from None
        result.append((kind, [values[i % len(values)] for i in range(int(count))]))
    return result


def _hops(cases: Sequence[Case], families: Sequence[str]) -> list[str]:
    return sorted({h for c in cases if c.family in families and c.status == "ok"
                   for h in c.component.split("+")})


def _component(kind: str, topology: Mapping[str, Any], rng: np.random.Generator,
               cases: Sequence[Case] = ()) -> str:
    """A random component that a fault of ``kind`` hits (link faults: one the plan's cases
    cross, so the fault shows somewhere)."""
    model = PeakModel(topology)
    choices = {"hbm": [f"gpu{g}" for g in sorted(model.gpus)],
               "c2c": [f"link:c2c:gpu{g}" for g in sorted(model.gpus)
                       if model.link("c2c", g).gbps],
               "channel": [f"cpu{n}" for n in sorted(_host_numas(topology))],
               "nvlink": [h for h in _hops(cases, ("bw", "memcpy")) if h.startswith("link:nvlink:")],
               "interconnect": [h for h in _hops(cases, ("bw", "memcpy"))
                                if h.startswith("link:interconnect:")],
               "memcpy": sorted({f"gpu{c.columns['gpu']}" for c in cases
                                 if c.family == "memcpy" and c.status == "ok"}),
               "latency": _hops(cases, ("chase", "pingpong"))}
    choices["numa"] = choices["channel"]  # named by the socket whose memory it is
    if kind not in choices:
        return "node"
    if not choices[kind]:
        raise InputError(f"--faults {kind}: this fixture has no such component (no "
                         f"{'C2C-linked GPU' if kind == 'c2c' else kind + ' path' if kind in LINK else 'GPU or host memory'}); "
                         "valid: fault kinds the topology has")
    return str(rng.choice(choices[kind]))


def inject(nodes: Sequence[str], spec: str, topology: Mapping[str, Any],
           rng: np.random.Generator, cases: Sequence[Case] = ()) -> list[Fault]:
    """Faults on distinct nodes, so that every other node is healthy."""
    wanted = [(kind, size) for kind, sizes in parse_faults(spec) for size in sizes]
    if len(wanted) > len(nodes):
        raise InputError(f"--faults asks for {len(wanted)} faulty nodes but --nodes is "
                         f"{len(nodes)}; valid: at most one fault per node")
    chosen = rng.choice(len(nodes), size=len(wanted), replace=False)
    faults = []
    files = sorted({c.file for c in cases})
    for (kind, size), index in zip(wanted, chosen):
        fault = Fault(nodes[int(index)], kind, _component(kind, topology, rng, cases), size,
                      path_class=PATH_CLASS[kind])
        if kind in INTEGRITY:
            fault.detail = str(rng.choice(files)) if files != [""] else ""
        if kind == "partial":
            planned = sum(1 for c in cases if c.file == fault.detail)
            fault.size = float(rng.integers(1, max(planned, 2)))  # cases kept
        if kind == "latency":
            hit = {c.family for c in cases if fault.component in c.component.split("+")
                   and c.family in ("chase", "pingpong")}
            fault.path_class = "+".join(sorted(hit))
        faults.append(fault)
    return faults


def _overrides(fault: Fault, topology: Mapping[str, Any]) -> dict[str, float]:
    if fault.kind not in ("hbm", "c2c", "channel"):
        return {}
    # The capacity lowered is the one _value() used, unknown ones at UNKNOWN_PEAK_GBPS, so
    # that a fault never raises a path above its healthy value.
    model = PeakModel(topology)
    if fault.kind == "c2c":
        name = fault.component
        full = model.link("c2c", int(name.rsplit("gpu", 1)[1])).gbps
    else:
        name = fault.component if fault.kind == "hbm" else f"numa{fault.component[3:]}"
        full = model.memory(name).gbps
    return {name: (full or UNKNOWN_PEAK_GBPS) * (1.0 - min(fault.size, 0.99))}


# Columns written per family: the static case columns of the preset plus these defaults.
DEFAULTS: dict[str, dict[str, Any]] = {
    "bw": {"dst_mem": "", "dst_alloc": "", "size_bytes": SIZE, "bytes": SIZE, "noise": "",
           "passes": 1, "placement": "", "dst_placement": "", "cache_resident": 0},
    "memcpy": {"mode": "bandwidth", "all_gpus": 0, "engine": "ce", "size_bytes": SIZE,
               "bytes": SIZE, "timing": "events", "via": "", "sweep": 0,
               "saturation_bytes": -1, "sm_threads": -1, "placement": "", "chunk_bytes": -1},
    "chase": {"pattern": "random", "size_bytes": SIZE, "line_bytes": 64,
              "locality_bytes": SIZE, "huge_pages": 0, "accesses": 1 << 20,
              "huge_page_fraction": float("nan"), "placement": "", "median_cycles": float("nan")},
    "pingpong": {"a_cpu": -1, "b_cpu": -1, "flag_bytes": 1, "round_trips": 1000,
                 "placement": ""},
}
METRIC = {"bw": "GBps", "memcpy": "GBps", "chase": "ns", "pingpong": "ns"}
#: Timed repetitions of the preset's files by their first name (slurm/vet_node.sh's
#: defaults; ping-pong's round trips are summarised, REPS of them are stored). --layout node
#: writes REPS of each.
PRESET_REPS = {"bw": 15, "copy": 15, "memcpy": 15, "chase": 7, "chase_gpu": 3, "pingpong": REPS}
# The cases table's columns of a plan's PLAN line that are not columns (mempath's own).
_NOT_COLUMNS = {"family", "status", "reason"}


def _kind(name: str) -> str:
    return "gpu" if name.startswith("gpu") else "cpu"


def _hop_ns(via: str) -> float:
    return sum(HOP_NS.get(t, 0.0) for t in via.split("+") if t)


def preset_plan(preset: Mapping[str, Any]) -> Plan:
    """The preset's cases (tests/fleetsim/preset.py), file by file, valued like plan()'s."""
    topology = preset["topology"]
    processors = {p["name"]: p for p in topology.get("processors", [])}
    cpu_kernel = "neon" if topology.get("arch") == "aarch64" else "avx2"
    cases = []
    for name, planned in preset["files"].items():
        for entry in planned:
            columns = {k: v for k, v in entry.items() if k not in _NOT_COLUMNS}
            family = entry["family"]
            status = "ok" if entry["status"] == "planned" else "skipped"
            case = Case(family, columns, file=name, status=status,
                        reason=str(entry.get("reason", "")))
            if family == "bw":
                pu = columns["pu"]
                gpu = _kind(pu) == "gpu"
                columns["pu_kind"] = "gpu" if gpu else "cpu"
                columns["kernel"] = columns.get("kernel") or ("grid" if gpu else cpu_kernel)
                if gpu and int(columns.get("threads", -1)) < 0:
                    columns["threads"] = int(processors.get(pu, {}).get("sm_count", 0)) * 2048
                columns["bytes"] = columns.get("size_bytes", SIZE)
                columns["dst_alloc"] = columns["alloc"] if columns.get("dst_mem") else ""
                case.pu, case.mem, case.via = pu, columns["mem"], str(columns["via"])
            elif family == "memcpy":
                columns.update(gpus=str(columns["gpu"]), dst_gpu=-1)
                case.pu, case.mem = f"gpu{columns['gpu']}", f"numa{columns['host_numa']}"
                case.via = str(columns.get("via", ""))
            elif family == "chase":
                case.latency = LATENCY_NS[f"chase {_kind(columns['pu'])}"] + _hop_ns(columns["via"])
            else:
                pair = "-".join(sorted((_kind(columns["a"]), _kind(columns["b"]))))
                case.latency = LATENCY_NS[f"pingpong {pair}"] + _hop_ns(columns.get("via", ""))
            case.numas = _case_numas(columns)
            cases.append(case)
    return Plan(topology, cases)


def _case_numas(columns: Mapping[str, Any]) -> tuple[int, ...]:
    """The host NUMA nodes a case needs: its memories and sockets by name."""
    names = [str(columns.get(k, "")) for k in ("pu", "mem", "dst_mem", "a", "b")]
    numas = [int(n[4:]) for n in names if n.startswith("numa") and n[4:].isdigit()]
    numas += [int(n[3:]) for n in names if n.startswith("cpu") and n[3:].isdigit()]
    if "host_numa" in columns and int(columns["host_numa"]) >= 0:
        numas.append(int(columns["host_numa"]))
    return tuple(sorted(set(numas)))


def _value(case: Case, model: PeakModel) -> float:
    if case.latency:
        return case.latency
    peak = model.path(case.pu, case.mem, case.via or None).gbps
    dst = case.columns.get("dst_mem") if case.family == "bw" else ""
    if dst and dst != case.mem:  # a copy is limited by its slower end
        peak = min(filter(None, (peak, model.path(case.pu, dst, case.via or None).gbps)),
                   default=None)
    return (peak or UNKNOWN_PEAK_GBPS) * EFFICIENCY


class Writer:
    """Writes the nodes of one plan; the static columns are built once."""

    def __init__(self, fleet_plan: Plan, seed: int, noise: dict[str, Any] | None = None,
                 noise_scale: float = 1.0, layout: str = "node"):
        self.plan, self.seed, self.layout = fleet_plan, seed, layout
        self.topology_text = json.dumps(fleet_plan.topology)
        self.model = PeakModel(fleet_plan.topology)
        topo = Topo(fleet_plan.topology)
        for case in fleet_plan.cases:
            if case.family == "memcpy" and not case.columns.get("via"):  # the topology's
                case.columns["via"] = self.model.vias.get((case.pu, case.mem), "")
            row = {**DEFAULTS[case.family], **case.columns}
            case.path, case.component = path_and_component(case.family, row, topo)
            case.noise_class = noise_model.class_of(case.family, case.path)
        self.base = np.asarray([_value(c, self.model) for c in fleet_plan.cases])
        self.rng = np.random.default_rng(seed)
        self.noise = (noise_model.Noise(noise, [c.noise_class for c in fleet_plan.cases],
                                        noise_scale) if noise else None)
        self.status = np.asarray([c.status for c in fleet_plan.cases], dtype=object)
        self.reason = np.asarray([c.reason for c in fleet_plan.cases], dtype=object)
        self.files = list(dict.fromkeys(c.file for c in fleet_plan.cases))
        self.rows = {f: [i for i, c in enumerate(fleet_plan.cases) if c.file == f] for f in self.files}
        self.by_family = {f: np.asarray([c.family == f for c in fleet_plan.cases]) for f in DEFAULTS}
        self.hops = [frozenset(c.component.split("+")) for c in fleet_plan.cases]
        self.family = np.asarray([c.family for c in fleet_plan.cases], dtype=object)
        self._columns: dict[tuple[Any, ...], dict[str, np.ndarray]] = {}
        self._templates: dict[str, tuple[bytes, list[int], dict]] = {}
        self.reps = np.asarray([PRESET_REPS[c.file.split("/")[0].removesuffix(".h5")]
                                if layout == "preset" else REPS for c in fleet_plan.cases])

    # -- values ----------------------------------------------------------------------------
    def values(self, index: int, fault: Fault | None, retest: int = 0) -> np.ndarray:
        """Each case's median on node ``index`` in pass ``retest`` (0: the night's run)."""
        values = self.base
        if fault and fault.kind in CAPACITY:
            model = PeakModel(self.plan.topology, _overrides(fault, self.plan.topology))
            values = np.asarray([_value(c, model) for c in self.plan.cases])
        if fault and fault.kind in LINK:
            values = values * self._link_factor(fault)
        lasting = np.random.default_rng([self.seed, index, 1])  # the node's own, every pass
        drawn = np.random.default_rng([self.seed, index, 2, retest])
        n = len(values)
        spread = fault.size if fault and fault.kind == "noisy" else 1.0
        # No median beyond the path's peak: a real node cannot, and the fleet analysis
        # fails a node that reports one (integrity.py).
        latency = np.asarray([bool(c.latency) for c in self.plan.cases])
        peak = np.where(latency, np.inf, values / EFFICIENCY)
        if self.noise is None:
            level = lasting.lognormal(0.0, CASE_SIGMA * spread, n)
            return np.minimum(peak, values * level * drawn.lognormal(0.0, CASE_SIGMA * spread, n))
        level = lasting.lognormal(0.0, CASE_SIGMA, n)
        return np.minimum(peak, values * level * np.exp(self.noise.draw(drawn) * spread))

    def _link_factor(self, fault: Fault) -> np.ndarray:
        if fault.kind == "memcpy":
            hit = np.asarray([c.family == "memcpy" and f"gpu{c.columns.get('gpu')}" == fault.component
                              for c in self.plan.cases])
        else:
            families = ("chase", "pingpong") if fault.kind == "latency" else ("bw", "memcpy")
            hit = np.asarray([fault.component in h for h in self.hops]) & np.isin(self.family, families)
        change = 1.0 + fault.size if fault.kind == "latency" else 1.0 - min(fault.size, 0.99)
        return np.where(hit, change, 1.0)

    def samples(self, index: int, medians: np.ndarray, fault: Fault | None,
                retest: int = 0) -> dict[int, np.ndarray]:
        """Each case's repetitions, scaled so that their median is exactly the case's:
        {reps: (cases, reps) matrix}, case i's row in the matrix of its reps."""
        rng = np.random.default_rng([self.seed, index, 3, retest])
        spread = fault.size if fault and fault.kind == "noisy" else 1.0
        sigma = np.full(len(medians), SAMPLE_SIGMA) if self.noise is None else \
            np.nan_to_num(self.noise.rep_spread, nan=SAMPLE_SIGMA)
        out = {}
        for reps in np.unique(self.reps):
            draws = rng.lognormal(0.0, 1.0, (len(medians), reps)) ** (sigma * spread)[:, None]
            out[int(reps)] = draws * (medians / np.median(draws, axis=1))[:, None]
        return out

    # -- writing ---------------------------------------------------------------------------
    def node(self, out: Path, host: str, index: int, night: str, fault: Fault | None,
             retest: int = 0, only: Sequence[int] | None = None) -> None:
        """Write node ``index``: its files into ``out`` (one <host>.h5, or the preset's
        files and plan.json under out/<host>); ``only``: the cases a retest re-runs."""
        status, reason = self.status.copy(), self.reason.copy()
        medians = self.values(index, fault, retest)
        samples = self.samples(index, medians, fault, retest)
        if fault and fault.kind == "failed":
            ran = status == "ok"
            status[ran], reason[ran] = "failed", "simulated failure: the node's GPUs did not respond"
        keep = np.ones(len(status), dtype=bool) if only is None else np.isin(
            np.arange(len(status)), np.asarray(only, dtype=int))
        integrity = fault if (fault and fault.kind in INTEGRITY and only is None) else None
        attrs = self._attrs(host, night)
        written = []
        for name in self.files:
            rows = [i for i in self.rows[name] if keep[i]]
            if not rows:
                continue
            target = (out / f"{host}.h5") if self.layout == "node" else out / host / name
            if integrity and integrity.detail == name:
                if integrity.kind == "nofile":
                    continue
                if integrity.kind == "partial":
                    rows = rows[:int(integrity.size)]
            target.parent.mkdir(parents=True, exist_ok=True)
            tables = self._tables(rows, medians, samples, status, reason)
            as_planned = only is None and not (integrity and integrity.kind == "partial"
                                               and integrity.detail == name) \
                and (status[rows] == self.status[rows]).all()
            if as_planned and len(host) == len(TEMPLATE_HOST):
                self._from_template(target, name, host, night, tables)
            else:
                write_result(target, attrs, {t: [column(n, v) for n, v in c.items()]
                                             for t, c in tables.items()}, sync=False)
            written.append(target)
            if integrity and integrity.detail == name and integrity.kind == "truncated":
                size = target.stat().st_size
                with open(target, "rb+") as handle:
                    handle.truncate(int(size * integrity.size))
        if self.layout == "preset" and only is None:
            counts = {f: int(sum(1 for c in self.plan.cases if c.file == f and c.status == "ok"))
                      for f in self.files}
            (out / host).mkdir(parents=True, exist_ok=True)
            (out / host / "plan.json").write_text(json.dumps(
                {"schema": 1, "host": host, "files": counts}))

    def _tables(self, rows: list[int], medians: np.ndarray, samples: dict[int, np.ndarray],
                status: np.ndarray, reason: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        tables: dict[str, dict[str, np.ndarray]] = {}
        for family in DEFAULTS:
            mine = [i for i in rows if self.by_family[family][i]]
            if mine:
                tables.update(self._family(family, mine, medians, samples, status, reason))
        return tables

    def _from_template(self, path: Path, name: str, host: str, night: str,
                       tables: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """The file as write_result() writes it, made from a template of this file: the
        same bytes but the host's name and the numbers (h5py's dataset and attribute
        creation was ~30 ms a file; 140,000 files of a 10,752-node fleet). Only files whose
        cases and statuses are the plan's are written so; their strings are the template's."""
        if name not in self._templates:
            self._templates[name] = self._template(path, night, tables)
        data, hosts, slots = self._templates[name]
        buffer = bytearray(data)
        code = host.encode()
        for at in hosts:
            buffer[at:at + len(code)] = code
        for (table, name), (slot, kind) in slots.items():
            values = np.asarray(tables[table][name], dtype=kind)
            buffer[slot:slot + values.nbytes] = values.tobytes()
        path.write_bytes(buffer)

    def _template(self, path: Path, night: str,
                  tables: Mapping[str, Mapping[str, np.ndarray]]) -> tuple[bytes, list[int], dict]:
        scratch = path.with_name(path.name + ".template")
        write_result(scratch, self._attrs(TEMPLATE_HOST, night),
                     {t: [column(n, v) for n, v in c.items()] for t, c in tables.items()},
                     sync=False)
        slots = {}
        with h5py.File(scratch, "r") as handle:
            for table, columns in tables.items():
                for name in columns:
                    dataset = handle[table][name]
                    if dataset.dtype.kind in "if" and dataset.shape[0]:
                        if dataset.id.get_offset() is None or dataset.dtype.itemsize != 8:
                            raise RuntimeError(f"{table}/{name}: not a contiguous 8-byte column")
                        kind = "<f8" if dataset.dtype.kind == "f" else "<i8"
                        slots[(table, name)] = (dataset.id.get_offset(), kind)
        data = scratch.read_bytes()
        scratch.unlink()
        code, hosts, at = TEMPLATE_HOST.encode(), [], data.find(TEMPLATE_HOST.encode())
        while at >= 0:
            hosts.append(at)
            at = data.find(code, at + 1)
        return data, hosts, slots

    def _static(self, family: str, rows: list[int]) -> dict[str, np.ndarray]:
        """The plan's columns of these cases (built once per file's rows); a column that
        only some cases have (bw's blocks: GPUs) is -1 or "" where it does not apply."""
        key = (family, tuple(rows))
        if key not in self._columns:
            merged = [{**DEFAULTS[family], **self.plan.cases[i].columns} for i in rows]
            names = list(dict.fromkeys(k for m in merged for k in m))
            static = {}
            for name in names:
                present = [m[name] for m in merged if name in m]
                fill = "" if isinstance(present[0], str) else -1
                values = [m.get(name, fill) for m in merged]
                static[name] = np.asarray(values, dtype=STR if isinstance(fill, str) else None)
            self._columns[key] = static
        return dict(self._columns[key])

    def _attrs(self, host: str, night: str) -> dict[str, Any]:
        gpus = len(self.model.gpus)
        return {"tool": "mempath", "tool_version": "synthetic", "git_revision": "synthetic",
                "command_line": "python -m tests.fleetsim", "host": host,
                "start_time": f"{night}T02:00:00Z", "end_time": f"{night}T02:04:00Z",
                "topology": self.topology_text, "arch": self.plan.topology.get("arch", ""),
                "gpu_uuids": ",".join(f"GPU-sim-{host}-{g}" for g in range(gpus)),
                "schema_version": 1, "synthetic": 1}

    def _family(self, family: str, rows: list[int], medians: np.ndarray,
                samples: dict[int, np.ndarray], status: np.ndarray,
                reason: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        unit = METRIC[family]
        ok = status[rows] == "ok"
        nan = np.where(ok, 1.0, np.nan)
        drawn = samples[int(self.reps[rows[0]])][rows]  # a family's cases share their reps
        cases: dict[str, Any] = self._static(family, rows)
        cases.update({
            "case_id": np.arange(len(rows)), "status": status[rows].astype(STR),
            "reason": reason[rows].astype(STR), "reps": np.where(ok, drawn.shape[1], 0),
            f"median_{unit}": medians[rows] * nan, f"min_{unit}": drawn.min(axis=1) * nan,
            "verified": ok.astype(np.int64)})
        if unit == "GBps":
            cases["max_GBps"] = drawn.max(axis=1) * nan
        if family == "pingpong":  # the round trips' percentiles, from the repetitions' spread
            low, high, p99 = np.quantile(drawn, [0.05, 0.95, 0.99], axis=1)
            cases.update(p05_ns=low * nan, p95_ns=high * nan, p99_ns=p99 * nan,
                         mean_ns=drawn.mean(axis=1) * nan, max_ns=drawn.max(axis=1) * nan)
        taken = np.flatnonzero(ok)
        value = "bandwidth_GBps" if unit == "GBps" else ("rtt_ns" if family == "pingpong"
                                                         else "ns_per_access")
        reps = drawn.shape[1]
        sample_columns = {"case_id": np.repeat(taken, reps), "rep": np.tile(np.arange(reps), len(taken)),
                          value: drawn[taken].ravel()}
        return {f"{family}/cases": cases, f"{family}/samples": sample_columns}


def without_numa(topology: Mapping[str, Any], numa: int) -> dict[str, Any]:
    """The topology with host NUMA node ``numa``, its socket and their paths removed."""
    gone = {f"numa{numa}", *(p["name"] for p in topology.get("processors", [])
                             if p.get("kind") == "cpu" and p.get("numa") == numa)}
    return {**topology,
            "processors": [p for p in topology.get("processors", []) if p["name"] not in gone],
            "memories": [m for m in topology.get("memories", []) if m["name"] not in gone],
            "paths": [p for p in topology.get("paths", [])
                      if p["pu"] not in gone and p["mem"] not in gone]}


def _plan_of(fixture: str, layout: str, topology: dict[str, Any] | None = None) -> Plan:
    if layout == "preset":
        preset = load_preset(fixture)
        if topology is None:
            return preset_plan(preset)
        # A node without a NUMA node plans none of its cases (vet_node.sh plans against
        # the live topology): the preset's cases that need it are gone, the rest kept.
        lost = {m["numa"] for m in preset["topology"].get("memories", []) if m.get("kind") == "host"} \
            - _host_numas(topology)
        full = preset_plan(preset)
        return Plan(topology, [c for c in full.cases if not set(c.numas) & lost])
    full = load_topology(fixture)
    return plan(topology if topology is not None else full, reads.load(fixture, full))


def _noise_of(noise: str | None, noise_from: Sequence[Path] | None,
              rejected: list[str]) -> dict[str, Any] | None:
    if noise and noise_from:
        raise InputError("--noise and --noise-from: valid: one of them (a model, or the runs "
                         "to fit one from)")
    if noise_from:
        return noise_model.fit(noise_from, rejected)
    return noise_model.load_model(noise) if noise else None


# A worker's writers, set before the pool forks (the plan is built once, not pickled).
_JOB: dict[str, Any] = {}


def _write_nodes(indices: Sequence[int]) -> None:
    job = _JOB
    for index in indices:
        name = job["names"][index]
        fault = job["faults"].get(name)
        writer = job["lost"].get(name, job["writer"])
        writer.node(job["out"], name, index, job["night"], fault)
        if job["summaries"] and (job["out"] / name).is_dir():
            try:
                write_summary(job["out"] / name)
            except InputError:  # a node without a readable file: no summary, as on a node
                pass


def _run(indices: list[int], jobs: int) -> None:
    jobs = max(1, min(jobs, len(indices) // 64 or 1))
    if jobs == 1:
        _write_nodes(indices)
        return
    chunks = [indices[i::jobs * 8] for i in range(jobs * 8)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        pool.map(_write_nodes, chunks)


def simulate(nodes: int, fixture: str, spec: str, out: Path, seed: int,
             night: str = "2026-11-24", layout: str = "node", noise: str | None = None,
             noise_from: Sequence[Path] | None = None, noise_scale: float = 1.0,
             jobs: int | None = None, rejected: list[str] | None = None,
             summaries: bool = False) -> dict[str, Any]:
    """Write the nodes, DIR/truth.json and (with a noise model) DIR/noise.json; returns the
    truth. ``summaries``: each preset node's fleet-summary.json as well, written from its
    files as vet_node.sh does on a real node."""
    if nodes < 1:
        raise InputError(f"--nodes {nodes}: valid: a positive number of nodes")
    if layout not in LAYOUTS:
        raise InputError(f"--layout {layout}: valid: {', '.join(LAYOUTS)}")
    if not noise_scale > 0:
        raise InputError(f"--noise-scale {noise_scale:g}: valid: a number > 0 (2 doubles the noise)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: exists and is not an empty folder; valid: a new or empty -o DIR")
    model = _noise_of(noise, noise_from, rejected if rejected is not None else [])
    fleet_plan = _plan_of(fixture, layout)
    topology = fleet_plan.topology
    names = [f"nid{i:06d}" for i in range(1, nodes + 1)]
    writer = Writer(fleet_plan, seed, model, noise_scale, layout)
    faults = inject(names, spec, topology, writer.rng, fleet_plan.cases)
    # A lost NUMA node is gone from the node's topology, as `mempath topo` would show it:
    # the node plans none of its cases and reports another node kind (analysis.fleet.verdicts
    # must still compare it with the kind it should be).
    lost = {f.node: Writer(_plan_of(fixture, layout, without_numa(topology, int(f.component[3:]))),
                           seed, model, noise_scale, layout)
            for f in faults if f.kind == "numa"}
    by_node = {f.node: f for f in faults}
    failed = 0
    for fault in faults:
        if fault.kind == "failed":
            failed += 1
            fault.detail = "no file" if failed % 2 == 0 else "every case failed"
    out.mkdir(parents=True, exist_ok=True)
    skip = {f.node for f in faults if f.kind == "failed" and f.detail == "no file"}
    skip |= {f.node for f in faults if f.kind == "nofile" and layout == "node"}
    _JOB.update(names=names, faults=by_node, lost=lost, writer=writer, out=out, night=night,
                summaries=summaries and layout == "preset")
    try:
        _run([i for i, n in enumerate(names) if n not in skip], jobs or os.cpu_count() or 1)
    finally:
        _JOB.clear()
    truth = {"synthetic": True, "fixture": fixture, "seed": seed, "night": night,
             "layout": layout, "noise": "noise.json" if model else "lognormal",
             "noise_scale": noise_scale, "nodes": names,
             "cases_per_node": int(sum(writer.status == "ok")),
             "files_per_node": len(writer.files) if layout == "preset" else 1,
             "faults": [vars(f) for f in faults]}
    if model:
        (out / "noise.json").write_text(json.dumps(model, indent=1) + "\n")
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: cannot read {what} ({error})") from None


def simulate_retest(retest: Path, source: Path, out: Path, rounds: int = 3) -> dict[str, int]:
    """--retest RETEST.json --from SIMDIR -o OUT: each listed node's listed cases again,
    ``rounds`` times as vet_node.sh's VET_RETEST_ROUNDS, each round fresh noise of the same
    node (its lasting level and its faults kept), in the layout of SIMDIR under
    OUT/round<R>/<host>/<file>. Returns cases written per host (in each round)."""
    if not 1 <= rounds <= 99:
        raise InputError(f"--rounds {rounds}: valid: a whole number of rounds, 1 to 99")
    truth = _read_json(source / "truth.json", "the simulation's truth.json (valid: --from "
                                              "a folder written by python -m tests.fleetsim)")
    try:
        wanted = retest_list.read(retest)
    except ValueError as error:
        raise InputError(f"{retest}: {error} (the retest list: DIR/retest.json of analysis fleet)") from None
    model = _read_json(source / "noise.json", "noise.json") if truth.get("noise") == "noise.json" else None
    layout = truth.get("layout", "node")
    writer = Writer(_plan_of(truth["fixture"], layout), int(truth["seed"]), model,
                    float(truth.get("noise_scale", 1.0)), layout)
    faults = {f["node"]: Fault(**f) for f in truth["faults"]}
    index = {name: i for i, name in enumerate(truth["nodes"])}
    written: dict[str, int] = {}
    for host, entries in wanted.items():
        if host not in index:
            raise InputError(f"{retest}: host {host} is not a node of {source}; valid: the "
                             "simulation's nodes (truth.json)")
        fault = faults.get(host)
        node_writer = writer
        if fault and fault.kind == "numa":
            node_writer = Writer(_plan_of(truth["fixture"], layout, without_numa(
                writer.plan.topology, int(fault.component[3:]))), int(truth["seed"]), model,
                float(truth.get("noise_scale", 1.0)), layout)
        only = _matching(node_writer, host, entries, layout)
        for round_ in range(1, rounds + 1) if only else ():
            node_writer.node(out / f"round{round_}", host, index[host], truth["night"], fault,
                             retest=round_, only=only)
        written[host] = len(only)
    return written


def _matching(writer: Writer, host: str, entries: Sequence[Mapping[str, Any]],
              layout: str) -> list[int]:
    """The plan's cases a retest entry names: by file and fleet path (the path alone for
    --layout node, whose file is the node's)."""
    by_key = {(c.file, c.path): i for i, c in enumerate(writer.plan.cases)}
    by_path = {c.path: i for i, c in enumerate(writer.plan.cases)}
    chosen = []
    for entry in entries:
        key = (str(entry.get("file", "")), str(entry.get("path", "")))
        found = by_key.get(key) if layout == "preset" else by_path.get(key[1])
        if found is None:
            raise InputError(f"retest entry {dict(entry)} of {host} names no case of the "
                             "simulated preset; valid: entries of analysis fleet's retest.json")
        chosen.append(found)
    return sorted(set(chosen))
