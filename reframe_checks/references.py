"""Reference values of the mempath checks (bandwidths, transfers, latencies), kept apart
from the test logic; one lookup for every table (`resolve_in`).

    REFERENCES[op]['system:partition'][pattern] = (reference, lower, upper, unit)

`pattern` is a shell-style glob (fnmatch) over the performance variable names of
mempath_summary.py (`{pu}_{mem}[_to_{dst}]_{alloc}_{kernel}`); the CPU kernel is the ISA
the binary chose at run time (`sve`, `neon`, `avx2`, ...), so CPU patterns end in `_*`.
`lower`/`upper` are ReFrame's fractional thresholds around `reference`. A variable that no
pattern matches is reported without a reference (never a failure).

Seeds (alps:gh200, quad GH200 node): published GH200 read figures, each entered as the
published range and widened by SLACK on both sides. Writes and copies have no published
figure to seed from yet: fill them from measured runs (docs/results/).
"""
from __future__ import annotations

import fnmatch
from typing import Iterable

#: (reference, lower, upper, unit); a bound that is None is not checked (a floor only, or,
#: for latencies, an upper bound only).
Reference = tuple[float, float | None, float | None, str]

#: Widening of a published range before it becomes a pass band.
SLACK = 0.05


def published_range(low: float, high: float, slack: float = SLACK) -> Reference:
    """A ReFrame reference tuple accepting [low * (1 - slack), high * (1 + slack)] GB/s."""
    ref = (low + high) / 2
    return (ref, round(low * (1 - slack) / ref - 1, 4), round(high * (1 + slack) / ref - 1, 4),
            'GB/s')


# ---- Alps quad GH200: Grace socket s = NUMA s (0-3), GPU g attached to socket g, -------
# ---- GPU g's HBM = NUMA 4 + 8 g; every path below is a read. ---------------------------
ALPS_SOCKETS = range(4)


def alps_hbm(gpu: int) -> int:
    return 4 + 8 * gpu


HOPPER_HBM = published_range(3700, 3870)         # Hopper reading its own HBM
HOPPER_C2C_LPDDR = published_range(390, 450)     # Hopper reading its Grace's LPDDR (~420)
GRACE_LPDDR = published_range(440, 500)          # Grace reading its LPDDR (~480)
GRACE_C2C_HBM = published_range(300, 360)        # Grace reading its Hopper's HBM (~330)
PEER_SUPERCHIP = published_range(75, 125)        # Grace reading another superchip's memory


def _alps_gh200_read() -> dict[str, Reference]:
    refs: dict[str, Reference] = {}
    for g in ALPS_SOCKETS:
        refs[f'gpu{g}_gpu{g}_device_grid'] = HOPPER_HBM
        refs[f'gpu{g}_numa{alps_hbm(g)}_numa_grid'] = HOPPER_HBM
        for alloc in ('numa', 'pinned', 'registered'):
            refs[f'gpu{g}_numa{g}_{alloc}_grid'] = HOPPER_C2C_LPDDR
    for s in ALPS_SOCKETS:
        refs[f'cpu{s}_numa{s}_numa_*'] = GRACE_LPDDR
        refs[f'cpu{s}_numa{alps_hbm(s)}_numa_*'] = GRACE_C2C_HBM
        for t in ALPS_SOCKETS:
            if t != s:
                refs[f'cpu{s}_numa{t}_numa_*'] = PEER_SUPERCHIP
                refs[f'cpu{s}_numa{alps_hbm(t)}_numa_*'] = PEER_SUPERCHIP
    return refs


REFERENCES: dict[str, dict[str, dict[str, Reference]]] = {
    'read': {'alps:gh200': _alps_gh200_read()},
    'write': {},
    'copy': {},
}


def resolve_in(tables: dict[str, dict[str, Reference]],
               perf_vars: Iterable[str]) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables from `tables`
    (`{'system:partition': {pattern: reference}}`): for each system:partition, every
    variable that a pattern matches (first pattern wins; a name without glob characters
    matches only itself). Partitions where nothing matches are left out. The one lookup
    of every reference table below."""
    names = list(perf_vars)
    resolved: dict[str, dict[str, Reference]] = {}
    for syspart, patterns in tables.items():
        table: dict[str, Reference] = {}
        for name in names:
            for pattern, ref in patterns.items():
                if fnmatch.fnmatchcase(name, pattern):
                    table[name] = ref
                    break
        if table:
            resolved[syspart] = table
    return resolved


def resolve(op: str, perf_vars: Iterable[str]) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of an `op` check (REFERENCES[op])."""
    return resolve_in(REFERENCES.get(op, {}), perf_vars)


# ---- host<->device transfers (`mempath memcpy`, reframe_checks/transfers.py) -------------
#
#     TRANSFER_REFERENCES['system:partition'][pattern] = (reference, lower, upper, unit)
#
# over the transfer variable names of mempath_summary.py
# (`{gpu}_{mem}_{direction}_{engine}_{alloc}[_{metric}]`), one table for every transfer
# check (the metric suffix keeps the checks' names apart).
#
# SEEDS, not measurements of an Alps node: published figures of a dual-GH200 workstation
# (copy engine, pinned host memory, the issuing thread and buffer on the GPU's own Grace):
# H2D from the local LPDDR over C2C 377-420 GB/s, D2H 297 GB/s, either direction to the
# other superchip's memory 133 GB/s. A quad-GH200 Alps node shares the C2C link but not the
# socket-to-socket fabric, hence the wide bands (TRANSFER_SEED_SLACK, wider still for the
# remote socket). Replace them with measured runs (docs/results/) when there are some.

#: Widening of a seed figure from another machine before it becomes a pass band.
TRANSFER_SEED_SLACK = 0.25
#: The remote-socket seed comes from a two-socket box: Alps' four-socket fabric differs.
TRANSFER_REMOTE_SEED_SLACK = 0.4

GH200_H2D_C2C = published_range(377, 420, TRANSFER_SEED_SLACK)   # local LPDDR -> Hopper
GH200_D2H_C2C = published_range(297, 297, TRANSFER_SEED_SLACK)   # Hopper -> local LPDDR
GH200_REMOTE_SOCKET = published_range(133, 133, TRANSFER_REMOTE_SEED_SLACK)

#: Host allocators whose copies run at copy-engine speed (page-locked memory).
PAGE_LOCKED = ('pinned', 'registered')


def _alps_gh200_transfers() -> dict[str, Reference]:
    refs: dict[str, Reference] = {}
    for g in ALPS_SOCKETS:
        for alloc in PAGE_LOCKED:
            # One size, and the top of the size sweep (which runs on the nearest node only).
            for suffix in ('', '_peak'):
                refs[f'gpu{g}_numa{g}_h2d_ce_{alloc}{suffix}'] = GH200_H2D_C2C
                refs[f'gpu{g}_numa{g}_d2h_ce_{alloc}{suffix}'] = GH200_D2H_C2C
            for s in ALPS_SOCKETS:
                if s != g:
                    for direction in ('h2d', 'd2h'):
                        refs[f'gpu{g}_numa{s}_{direction}_ce_{alloc}'] = GH200_REMOTE_SOCKET
    return refs


TRANSFER_REFERENCES: dict[str, dict[str, Reference]] = {
    'alps:gh200': _alps_gh200_transfers(),
}


def resolve_transfers(perf_vars: Iterable[str]) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of a transfer check
    (TRANSFER_REFERENCES)."""
    return resolve_in(TRANSFER_REFERENCES, perf_vars)


# ---- nccl-tests all_reduce_perf busbw at the largest size (NcclTestsAllReduce) ------------
# CSCS publishes about 150 GB/s all-reduce busbw at 1 GiB on 2 nodes x 4 GH200 (Slingshot
# between the nodes); kept as a floor with 20 % slack, no upper bound.
NCCL_ALLREDUCE_BUSBW: dict[str, dict[tuple[int, int], Reference]] = {
    'alps:gh200': {(2, 4): (150.0, -0.2, None, 'GB/s')},
}


def resolve_nccl(nodes: int, ranks_per_node: int) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for NcclTestsAllReduce's `busbw` on `nodes` x `ranks_per_node`."""
    return {syspart: {'busbw': table[(nodes, ranks_per_node)]}
            for syspart, table in NCCL_ALLREDUCE_BUSBW.items() if (nodes, ranks_per_node) in table}


# ---- Latency (reframe_checks/latency.py): lower is better, so an upper bound only -------
#
#     LATENCY_REFERENCES['system:partition'][name] = (reference, None, upper, 'ns')
#
# over the variable names of the latency checks: `latency_ns_{pu}_{mem}` (MempathChase,
# median ns per load of a random chase over 1 GiB with the path's default allocator) and
# `rtt_ns_{a}_{b}_{mem}_{alloc}` (MempathPingPong). `lower` is None: a latency may be as
# low as it likes; `upper` is the fraction above the reference that still passes.
#
# SEEDS, not measurements of ours: published GH200 pointer-chase latencies of a quad-GH200
# Alps node (Fusco et al. 2024, "Understanding Data Movement in Tightly Coupled
# Heterogeneous Systems: A Case Study with the Grace Hopper Superchip"): Hopper -> its
# HBM ~344 ns, Hopper -> its Grace's LPDDR ~818 ns (over C2C), Grace -> its LPDDR
# ~170 ns, Grace -> its Hopper's HBM ~800 ns (over C2C). Each is used as an upper-bound
# threshold with LATENCY_SEED_SLACK (+25 %) of tolerance: a path fails only when it is
# clearly slower than published. No published seed yet for other sockets' memory, other
# allocators or ping-pong round trips: add them from measured Alps runs (docs/results/).

#: Tolerance above a published latency before a seed fails a run.
LATENCY_SEED_SLACK = 0.25


def upper_bound(ns: float, slack: float = LATENCY_SEED_SLACK) -> Reference:
    """A ReFrame reference tuple accepting any latency up to ns * (1 + slack)."""
    return (ns, None, slack, 'ns')


GH200_HOPPER_HBM_NS = upper_bound(344)      # Hopper reading its own HBM
GH200_HOPPER_LPDDR_NS = upper_bound(818)    # Hopper reading its Grace's LPDDR over C2C
GH200_GRACE_LPDDR_NS = upper_bound(170)     # Grace reading its own LPDDR
GH200_GRACE_HBM_NS = upper_bound(800)       # Grace reading its Hopper's HBM over C2C


def _alps_gh200_latency() -> dict[str, Reference]:
    refs: dict[str, Reference] = {}
    for s in ALPS_SOCKETS:
        refs[f'latency_ns_gpu{s}_gpu{s}'] = GH200_HOPPER_HBM_NS             # cudaMalloc
        refs[f'latency_ns_gpu{s}_numa{alps_hbm(s)}'] = GH200_HOPPER_HBM_NS  # HBM NUMA node
        refs[f'latency_ns_gpu{s}_numa{s}'] = GH200_HOPPER_LPDDR_NS
        refs[f'latency_ns_cpu{s}_numa{s}'] = GH200_GRACE_LPDDR_NS
        refs[f'latency_ns_cpu{s}_numa{alps_hbm(s)}'] = GH200_GRACE_HBM_NS
    return refs


LATENCY_REFERENCES: dict[str, dict[str, Reference]] = {'alps:gh200': _alps_gh200_latency()}


def resolve_latency(perf_vars: Iterable[str]) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of a latency check
    (LATENCY_REFERENCES)."""
    return resolve_in(LATENCY_REFERENCES, perf_vars)


# ---- Applications (issue 6): STREAM, GEMM, LLM decode. No published figure of these tools
# ---- on GH200 to seed from: the variables are logged without a band until measured runs
# ---- (docs/results/) give one. Same shape as the tables above.
APPLICATION_REFERENCES: dict[str, dict[str, Reference]] = {}


def resolve_applications(perf_vars: Iterable[str]) -> dict[str, dict[str, Reference]]:
    return resolve_in(APPLICATION_REFERENCES, perf_vars)

