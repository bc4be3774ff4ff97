"""Degraded and split layouts (#33): a Grace socket split by numa=fake is one socket with
one LPDDR5X module, both as `mempath topo` now writes it and as older files recorded it
(one processor per fake node, the socket interconnect between them). The quad GH200 that
lost a GPU is in test_peaks_nvlink.py."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from analysis.fleet.table import node_kind
from analysis.model.peaks import GRACE_LPDDR5X_480, PeakModel
from analysis.results.sockets import socket_count, socket_of
from conftest import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def topo(binary: Path, name: str) -> dict[str, Any]:
    return json.loads(run(binary, "topo", "--from", str(FIXTURES / name), "--json").stdout)


def as_written_before_33(doc: dict[str, Any]) -> dict[str, Any]:
    """The document an older mempath wrote for the same snapshot: every fake node its own
    CPU node (its sysfs cpulist), a processor each and `cpus`, `interconnect` between them,
    no `socket` field."""
    old = copy.deepcopy(doc)
    cpu0 = next(p for p in old["processors"] if p["name"] == "cpu0")
    for n in old["numa_nodes"]:
        del n["socket"]
        n["cpus"], n["cores"], n["llc_bytes"] = list(cpu0["cpus"]), cpu0["cores"], cpu0["cache_bytes"]
    ids = [n["id"] for n in old["numa_nodes"]]
    old["processors"] = [{**cpu0, "name": f"cpu{i}", "numa": i} for i in ids]
    old["processors"].append({**cpu0, "name": "cpus", "numa": None, "cores": cpu0["cores"] * len(ids)})
    old["paths"] = [{"pu": f"cpu{i}", "mem": f"numa{j}", "via": "local" if i == j else "interconnect"}
                    for i in ids for j in ids]
    old["paths"] += [{"pu": "cpus", "mem": f"numa{j}", "via": "spread"} for j in ids]
    return old


def test_numa_fake_grace_is_one_socket_with_its_memory_local(mempath_cpu_bin: Path) -> None:
    # Was cpu0..cpu3 and cpus (288 cores, 4 x 114 MiB LLC), interconnect between the nodes.
    doc = topo(mempath_cpu_bin, "grace_numa_fake")
    cpus = [p for p in doc["processors"] if p["kind"] == "cpu"]
    assert [(p["name"], p["cores"], p["cache_bytes"]) for p in cpus] == [("cpu0", 72, 116736 * 1024)]
    assert [n["socket"] for n in doc["numa_nodes"]] == [0, 0, 0, 0]
    assert {p["via"] for p in doc["paths"]} == {"local"}
    assert [m["name"] for m in doc["memories"]] == ["numa0", "numa1", "numa2", "numa3"]


def test_numa_fake_nodes_share_the_sockets_one_lpddr_module(mempath_cpu_bin: Path) -> None:
    # Was 150 (an assumed Grace-Grace link) to the other nodes, each node rated as a whole
    # 120 GB module (500): the socket's module is the 480 GB one, 384, shared by the four.
    model = PeakModel(topo(mempath_cpu_bin, "grace_numa_fake"))
    assert model.sockets == 1
    for mem in ("numa0", "numa1", "numa3"):
        peak = model.path("cpu0", mem)
        assert (peak.gbps, peak.limit, peak.unknown) == (GRACE_LPDDR5X_480.gbps, mem, ())
        assert "one module shared by numa0, numa1, numa2, numa3" in peak.citation


def test_older_files_of_a_numa_fake_node_read_as_one_socket(mempath_cpu_bin: Path) -> None:
    doc = topo(mempath_cpu_bin, "grace_numa_fake")
    old = as_written_before_33(doc)
    assert socket_of(old) == socket_of(doc) == {0: 0, 1: 0, 2: 0, 3: 0}
    assert socket_count(old) == socket_count(doc) == 1
    assert node_kind(old) == node_kind(doc) == "aarch64/1s/0xnone"
    model = PeakModel(old)
    assert model.sockets == 1
    peak = model.path("cpu1", "numa2")  # recorded as `interconnect`
    assert (peak.gbps, peak.limit) == (GRACE_LPDDR5X_480.gbps, "numa2")


def test_sockets_apart_and_sub_numa_clusters_stay_apart(mempath_cpu_bin: Path) -> None:
    quad = topo(mempath_cpu_bin, "gh200_quad")
    assert socket_of(quad) == {0: 0, 1: 1, 2: 2, 3: 3} and socket_count(quad) == 4
    assert PeakModel(quad).path("cpu0", "numa1").limit == "link:interconnect"
    # An older file of the quad: the rule finds the same four sockets (no CPUs shared).
    for n in quad["numa_nodes"]:
        del n["socket"]
    assert socket_of(quad) == {0: 0, 1: 1, 2: 2, 3: 3}
    # Shared CPUs farther apart than local (11, as sub-NUMA clusters are) are two sockets.
    split = as_written_before_33(topo(mempath_cpu_bin, "grace_numa_fake"))
    for n in split["numa_nodes"]:
        n["distances"] = [10 if m["id"] == n["id"] else 11 for m in split["numa_nodes"]]
    assert socket_count(split) == 4
