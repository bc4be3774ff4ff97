"""A fleet simulator: N synthetic node files of one topology with noise and injected faults.

For tests and benchmarks of the fleet analysis only (docs/fleet.md). Every file carries
the root attribute ``synthetic`` = 1, so it is never taken for a measurement. Nominal
values are model values, not measurements: a bandwidth is the PeakModel peak of its path
(analysis/model/peaks.py) x EFFICIENCY; a latency is a LATENCY_NS constant of its kind. A fault
lowers a capacity of the model (a GPU's HBM, a C2C link, a socket's LPDDR) and the path's
peak is recomputed, so a fault shows only on the paths it really limits.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import InputError
from ..results.h5writer import Column, column, write_result
from ..model.peaks import PeakModel

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
#: Fault kinds: their default size and what the size means.
FAULTS = {
    "hbm": 0.10,      # a GPU's HBM bandwidth lowered by this fraction
    "c2c": 0.5,       # a C2C link's width lost (0.5: half width)
    "channel": 0.125,  # a socket's LPDDR bandwidth lost (1/8: one of 8 channels)
    "noisy": 10.0,    # the node's noise multiplied by this
    "numa": 1.0,      # a NUMA node missing: its cases skipped
    "failed": 1.0,    # the node failed: no file (even count) or every case failed (odd)
}
STR = h5py.string_dtype("utf-8")


@dataclass
class Fault:
    node: str
    kind: str
    component: str
    size: float
    detail: str = ""


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


def plan(topology: dict[str, Any]) -> Plan:
    """The vetting preset of one node kind: every (processor, memory) read, host copies
    and GPU<->GPU copies, one chase per processor and a few ping-pongs."""
    processors = {p["name"]: p for p in topology.get("processors", [])}
    gpus = [p for p in processors.values() if p.get("kind") == "gpu"]
    hosts = sorted(_host_numas(topology))
    return Plan(topology, [*_bw_cases(topology, processors), *_memcpy_cases(gpus, hosts),
                           *_chase_cases(processors.values()), *_pingpong_cases(gpus, hosts)])


def _bw_cases(topology: Mapping[str, Any], processors: Mapping[str, Any]) -> list[Case]:
    cpu_kernel = "neon" if topology.get("arch") == "aarch64" else "avx2"
    cases = []
    for path in topology.get("paths", []):
        if "spread" in path["via"] or not path.get("allocs"):
            continue  # interleaved pages: not one component's path
        pu, mem = path["pu"], path["mem"]
        alloc = next((a for a in ("device", "numa", "system") if a in path["allocs"]),
                     path["allocs"][0])
        facts = processors.get(pu, {})
        gpu = facts.get("kind") == "gpu"
        threads = int(facts.get("sm_count", 0)) * 2048 if gpu else int(facts.get("cores", 1))
        cases.append(Case("bw", {
            "op": "read", "pu": pu, "pu_kind": "gpu" if gpu else "cpu", "mem": mem,
            "alloc": alloc, "kernel": "grid" if gpu else cpu_kernel, "threads": threads,
            "via": path["via"]}, pu, mem, path["via"],
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


def nominal(cases: Sequence[Case], model: PeakModel) -> np.ndarray:
    """Each case's model value under ``model`` (faults are overrides of its capacities)."""
    values = []
    for case in cases:
        if case.latency:
            values.append(case.latency)
            continue
        peak = model.path(case.pu, case.mem, case.via or None).gbps
        values.append((peak or UNKNOWN_PEAK_GBPS) * EFFICIENCY)
    return np.asarray(values, dtype=float)


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


def _component(kind: str, topology: Mapping[str, Any], rng: np.random.Generator) -> str:
    """A random component that a fault of ``kind`` hits."""
    model = PeakModel(topology)
    choices = {"hbm": [f"gpu{g}" for g in sorted(model.gpus)],
               "c2c": [f"link:c2c:gpu{g}" for g in sorted(model.gpus)
                       if model.link("c2c", g).gbps],
               "channel": [f"cpu{n}" for n in sorted(_host_numas(topology))]}
    choices["numa"] = choices["channel"]  # named by the socket whose memory it is
    if kind not in choices:
        return "node"
    if not choices[kind]:
        raise InputError(f"--faults {kind}: this fixture has no such component (no "
                         f"{'C2C-linked GPU' if kind == 'c2c' else 'GPU or host memory'}); "
                         "valid: fault kinds the topology has")
    return str(rng.choice(choices[kind]))


def inject(nodes: Sequence[str], spec: str, topology: Mapping[str, Any],
           rng: np.random.Generator) -> list[Fault]:
    """Faults on distinct nodes, so that every other node is healthy."""
    wanted = [(kind, size) for kind, sizes in parse_faults(spec) for size in sizes]
    if len(wanted) > len(nodes):
        raise InputError(f"--faults asks for {len(wanted)} faulty nodes but --nodes is "
                         f"{len(nodes)}; valid: at most one fault per node")
    chosen = rng.choice(len(nodes), size=len(wanted), replace=False)
    faults = []
    for (kind, size), index in zip(wanted, chosen):
        faults.append(Fault(nodes[int(index)], kind, _component(kind, topology, rng), size))
    return faults


def _overrides(fault: Fault, topology: Mapping[str, Any]) -> dict[str, float]:
    if fault.kind not in ("hbm", "c2c", "channel"):
        return {}
    # The capacity lowered is the one nominal() used, unknown ones at UNKNOWN_PEAK_GBPS, so
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


class Writer:
    """Writes the node files of one plan; the static columns are built once."""

    def __init__(self, fleet_plan: Plan, seed: int):
        self.plan = fleet_plan
        self.topology_text = json.dumps(fleet_plan.topology)
        self.model = PeakModel(fleet_plan.topology)
        self.base = nominal(fleet_plan.cases, self.model)
        self.rng = np.random.default_rng(seed)
        self.families = {f: [i for i, c in enumerate(fleet_plan.cases) if c.family == f]
                         for f in DEFAULTS}
        for case in fleet_plan.cases:  # memcpy's via is the topology's
            if case.family == "memcpy":
                case.columns["via"] = self.model.vias.get((case.pu, case.mem), "")
        self.static = {f: self._static(f, rows) for f, rows in self.families.items() if rows}

    def _static(self, family: str, rows: list[int]) -> dict[str, np.ndarray]:
        columns: dict[str, list[Any]] = {}
        for index in rows:
            merged = {**DEFAULTS[family], **self.plan.cases[index].columns}
            for key, value in merged.items():
                columns.setdefault(key, []).append(value)
        return {k: np.asarray(v, dtype=STR if isinstance(v[0], str) else None)
                for k, v in columns.items()}

    def node(self, path: Path, host: str, night: str, fault: Fault | None) -> None:
        values = self.base
        sigma_case, sigma_rep = CASE_SIGMA, SAMPLE_SIGMA
        if fault and fault.kind in ("hbm", "c2c", "channel"):
            model = PeakModel(self.plan.topology, _overrides(fault, self.plan.topology))
            values = nominal(self.plan.cases, model)
        if fault and fault.kind == "noisy":
            sigma_case, sigma_rep = sigma_case * fault.size, sigma_rep * fault.size
        n = len(self.plan.cases)
        samples = (values * self.rng.lognormal(0.0, sigma_case, n))[:, None] * \
            self.rng.lognormal(0.0, sigma_rep, (n, REPS))
        # No repetition beyond the path's peak: a real node cannot, and the fleet analysis
        # fails a node that reports it (integrity.py).
        latency = np.array([bool(c.latency) for c in self.plan.cases])
        samples = np.minimum(samples, np.where(latency, np.inf, values / EFFICIENCY)[:, None])
        status = np.full(n, "ok", dtype=object)
        reason = np.full(n, "", dtype=object)
        if fault and fault.kind == "numa":
            lost = int(fault.component[3:])
            gone = np.array([lost in c.numas for c in self.plan.cases])
            status[gone], reason[gone] = "skipped", f"NUMA node {lost} is not online (simulated)"
        if fault and fault.kind == "failed":
            status[:], reason[:] = "failed", "simulated failure: the node's GPUs did not respond"
        self._write(path, host, night, samples, status, reason)

    def _write(self, path: Path, host: str, night: str, samples: np.ndarray,
               status: np.ndarray, reason: np.ndarray) -> None:
        ok = status == "ok"
        tables: dict[str, list[Column]] = {}
        for family, rows in self.families.items():
            if rows:
                tables.update(self._family(family, rows, samples[rows], status[rows],
                                           reason[rows], ok[rows]))
        write_result(path, self._attrs(host, night), tables)

    def _attrs(self, host: str, night: str) -> dict[str, Any]:
        gpus = len(self.model.gpus)
        return {"tool": "mempath", "tool_version": "synthetic", "git_revision": "synthetic",
                "command_line": "python -m analysis simulate", "host": host,
                "start_time": f"{night}T02:00:00Z", "end_time": f"{night}T02:04:00Z",
                "topology": self.topology_text, "arch": self.plan.topology.get("arch", ""),
                "gpu_uuids": ",".join(f"GPU-sim-{host}-{g}" for g in range(gpus)),
                "schema_version": 1, "synthetic": 1}

    def _family(self, family: str, rows: list[int], samples: np.ndarray, status: np.ndarray,
                reason: np.ndarray, ok: np.ndarray) -> dict[str, list[Column]]:
        unit = METRIC[family]
        nan = np.where(ok, 1.0, np.nan)
        cases = dict(self.static[family])
        cases.update({
            "case_id": np.arange(len(rows)), "status": status.astype(STR),
            "reason": reason.astype(STR), "reps": np.where(ok, REPS, 0),
            f"median_{unit}": np.median(samples, axis=1) * nan,
            f"min_{unit}": samples.min(axis=1) * nan, "verified": ok.astype(np.int64)})
        if unit == "GBps":
            cases["max_GBps"] = samples.max(axis=1) * nan
        taken = np.flatnonzero(ok)
        value = "bandwidth_GBps" if unit == "GBps" else ("rtt_ns" if family == "pingpong"
                                                         else "ns_per_access")
        drawn = {"case_id": np.repeat(taken, REPS), "rep": np.tile(np.arange(REPS), len(taken)),
                 value: samples[taken].ravel()}
        return {f"{family}/cases": [column(name, data) for name, data in cases.items()],
                f"{family}/samples": [column(name, data) for name, data in drawn.items()]}


def without_numa(topology: Mapping[str, Any], numa: int) -> dict[str, Any]:
    """The topology with host NUMA node ``numa``, its socket and their paths removed."""
    gone = {f"numa{numa}", *(p["name"] for p in topology.get("processors", [])
                             if p.get("kind") == "cpu" and p.get("numa") == numa)}
    return {**topology,
            "processors": [p for p in topology.get("processors", []) if p["name"] not in gone],
            "memories": [m for m in topology.get("memories", []) if m["name"] not in gone],
            "paths": [p for p in topology.get("paths", [])
                      if p["pu"] not in gone and p["mem"] not in gone]}


def simulate(nodes: int, fixture: str, spec: str, out: Path, seed: int,
             night: str = "2026-11-24") -> dict[str, Any]:
    """Write the node files and DIR/truth.json; returns the truth."""
    if nodes < 1:
        raise InputError(f"--nodes {nodes}: valid: a positive number of nodes")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: exists and is not an empty folder; valid: a new or empty -o DIR")
    topology = load_topology(fixture)
    names = [f"nid{i:06d}" for i in range(1, nodes + 1)]
    writer = Writer(plan(topology), seed)
    faults = inject(names, spec, topology, writer.rng)
    # A lost NUMA node is gone from the node's topology, as `mempath topo` would show it:
    # the node plans none of its cases and reports another node kind (analysis.fleet.verdicts
    # must still compare it with the kind it should be).
    lost = {f.node: Writer(plan(without_numa(topology, int(f.component[3:]))), seed + i + 1)
            for i, f in enumerate(faults) if f.kind == "numa"}
    by_node = {f.node: f for f in faults}
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in names:
        fault = by_node.get(name)
        if fault and fault.kind == "failed":
            failed += 1
            fault.detail = "no file" if failed % 2 == 0 else "every case failed"
            if fault.detail == "no file":
                continue
        lost.get(name, writer).node(out / f"{name}.h5", name, night, fault)
    truth = {"synthetic": True, "fixture": fixture, "seed": seed, "night": night,
             "nodes": names, "cases_per_node": len(writer.plan.cases),
             "faults": [vars(f) for f in faults]}
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth
