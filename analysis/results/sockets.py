"""Which NUMA nodes of a topology are one CPU socket (docs/topology.md, "Degraded and split
layouts").

``numa=fake`` splits a socket's memory into several NUMA nodes; the kernel lists the
socket's CPUs in each of them, at the local distance (10) from each other. The rule, the
same as the C++ reader's (core/topology_discovery.cpp, ``join_split_sockets``): NUMA nodes
that share CPUs and have no distance between them above the local one are one socket,
named by its first node. Topologies written since #33 say so themselves (``numa_nodes[].
socket``); older ones are read by the rule from their nodes' CPUs and distances.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _by_rule(nodes: list[Mapping[str, Any]]) -> dict[int, int]:
    first = list(range(len(nodes)))

    def root(i: int) -> int:
        while first[i] != i:
            i = first[i]
        return i

    def distance(a: int, b: int) -> int:
        row = nodes[a].get("distances") or []
        return int(row[b]) if b < len(row) else 0

    cpus = [set(n.get("cpus") or []) for n in nodes]
    for a in range(len(nodes)):
        for b in range(a + 1, len(nodes)):
            ab, ba = distance(a, b), distance(b, a)
            if (cpus[a] & cpus[b] and ab > 0 and ba > 0
                    and ab <= distance(a, a) and ba <= distance(b, b)):
                ra, rb = root(a), root(b)
                first[max(ra, rb)] = min(ra, rb)
    return {int(n["id"]): int(nodes[root(i)]["id"]) for i, n in enumerate(nodes)
            if cpus[i] or root(i) != i}


def socket_of(topology: Mapping[str, Any]) -> dict[int, int]:
    """NUMA node id -> the id of the node that names its socket, for every node with CPUs
    and every node of a split socket (CPU-less nodes of no socket, e.g. HBM, are left out).
    Empty when the topology lists no NUMA nodes."""
    nodes = [n for n in topology.get("numa_nodes") or [] if isinstance(n, Mapping) and "id" in n]
    if any("socket" in n for n in nodes):
        return {int(n["id"]): int(n["socket"]) for n in nodes if n.get("socket") is not None}
    return _by_rule(nodes)


def socket_count(topology: Mapping[str, Any]) -> int:
    """CPU sockets: the processors of one NUMA node (``cpuN``), those of one split socket
    counted once."""
    sockets = socket_of(topology)
    return len({sockets.get(p["numa"], p["numa"]) for p in topology.get("processors", [])
                if p.get("kind") == "cpu" and p.get("numa") is not None})
