"""Reference values of the mempath checks (bandwidths, transfers, latencies), kept apart
from the test logic; one lookup for every table (`resolve_in`).

    REFERENCES[op][key][pattern] = (reference, lower, upper, unit)

`key` is an `Arch` (a processor architecture and GPU architecture, as a partition's
`processor.arch` and `devices` declare them: the table applies on any system with such
nodes, whatever the centre names it) or a `'system:partition'` string (one system's own
figures, which win over its architecture's). `pattern` is a shell-style glob (fnmatch)
over the check's performance variable names (mempath_summary.py). A variable that no
pattern matches is reported without a reference (never a failure).

Bandwidths are floors (`upper` None: faster always passes), latencies ceilings (`lower`
None). Seeds (quad GH200): published GH200 read figures, the low end of each published
range less SLACK. Writes and copies have no published figure to seed from yet: fill them
from measured runs (docs/results/).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Iterable, Union

import mempath_kinds

#: (reference, lower, upper, unit); a bound that is None is not checked (a floor only, or,
#: for latencies, an upper bound only).
Reference = tuple[float, float | None, float | None, str]

#: Widening of a published range before it becomes a pass band.
SLACK = 0.05


@dataclass(frozen=True)
class Arch:
    """Nodes of a processor architecture with GPUs of a GPU architecture ('' = any or
    none), as ReFrame's partition `processor.arch` and `devices[].arch` name them."""

    processor: str
    gpu: str = ''

    def matches(self, partition) -> bool:
        if partition is None or (partition.processor.arch or '') != self.processor:
            return False
        return not self.gpu or any(d.arch == self.gpu
                                   for d in partition.select_devices('gpu'))

    def __str__(self) -> str:
        return f'{self.processor}+{self.gpu}' if self.gpu else self.processor


#: Grace (Neoverse V2) with Hopper (sm_90): every GH200 system, one to four superchips.
GH200 = Arch('neoverse_v2', 'sm_90')

#: A table's key: an architecture, or 'system:partition'.
Key = Union[Arch, str]


def published_range(low: float, high: float, slack: float = SLACK) -> Reference:
    """A floor: ReFrame's reference tuple accepting anything from low * (1 - slack) GB/s up
    (`high` only places the reference at the middle of the published range)."""
    ref = (low + high) / 2
    return (ref, round(low * (1 - slack) / ref - 1, 4), None, 'GB/s')


# ---- GH200, by class of path (mempath_summary.path_class: the weakest GPU / socket); reads
HOPPER_HBM = published_range(3700, 3870)         # Hopper reading its own HBM
HOPPER_C2C_LPDDR = published_range(390, 450)     # Hopper reading its Grace's LPDDR (~420)
GRACE_LPDDR = published_range(440, 500)          # Grace reading its LPDDR (~480)
GRACE_C2C_HBM = published_range(300, 360)        # Grace reading its Hopper's HBM (~330)
PEER_SUPERCHIP = published_range(75, 125)        # Grace reading another superchip's memory


def _gh200_read() -> dict[str, Reference]:
    refs: dict[str, Reference] = {
        'gpu_gpu_local_device_min': HOPPER_HBM,
        'gpu_numa_local_numa_min': HOPPER_HBM,         # the HBM's NUMA node
        'cpu_numa_local_numa_min': GRACE_LPDDR,
        'cpu_numa_c2c_numa_min': GRACE_C2C_HBM,
        'cpu_numa_interconnect_numa_min': PEER_SUPERCHIP,
        # Grace reading another superchip's HBM: the Grace link, then that superchip's C2C.
        'cpu_numa_interconnect_c2c_numa_min': PEER_SUPERCHIP,
    }
    for alloc in ('numa', 'pinned', 'registered'):
        refs[f'gpu_numa_c2c_{alloc}_min'] = HOPPER_C2C_LPDDR
    return refs


REFERENCES: dict[str, dict[str, dict[str, Reference]]] = {
    'read': {GH200: _gh200_read()},
    'write': {},
    'copy': {},
}


def resolve_in(tables: dict[Key, dict[str, Reference]], perf_vars: Iterable[str],
               partition=None) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables from `tables`: per key, every
    variable that a pattern matches (first pattern wins; a name without glob characters
    matches only itself). A 'system:partition' key stays as it is; an `Arch` key becomes
    `partition`'s full name where the partition has that architecture (unless the
    partition has its own table), or stays the Arch where no partition is given (to read
    the table). Keys where nothing matches are left out. The one lookup of every table."""
    names = list(perf_vars)

    def matched(patterns: dict[str, Reference]) -> dict[str, Reference]:
        table: dict[str, Reference] = {}
        for name in names:
            for pattern, ref in patterns.items():
                if fnmatch.fnmatchcase(name, pattern):
                    table[name] = ref
                    break
        return table

    resolved: dict = {}
    for key, patterns in sorted(tables.items(), key=lambda kv: isinstance(kv[0], Arch)):
        if isinstance(key, Arch) and partition is not None:
            if not key.matches(partition) or partition.fullname in resolved:
                continue
            key = partition.fullname
        table = matched(patterns)
        if table:
            resolved[key] = table
    return resolved


def resolve(op: str, perf_vars: Iterable[str], partition=None) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of an `op` check (REFERENCES[op])."""
    return resolve_in(REFERENCES.get(op, {}), perf_vars, partition)


# ---- host<->device transfers (`mempath memcpy`, reframe_checks/transfers.py) -------------
#
#     TRANSFER_REFERENCES['system:partition'][pattern] = (reference, lower, upper, unit)
#
# over the transfer class names of mempath_summary.py
# (`{gpu}_numa_{via}_{direction}_{engine}_{alloc}[_{metric}]_{min|max}`), one table for
# every transfer check (the metric suffix keeps the checks' names apart).
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
PAGE_LOCKED = mempath_kinds.PAGE_LOCKED


def _gh200_transfers() -> dict[str, Reference]:
    """By class (mempath_summary.transfer_perf_values): the slowest GPU to or from its own
    Grace's LPDDR (`c2c`), and from the other superchip's of a dual GH200 without GPU peer
    access (`c2c_interconnect`, the workstation's published figure). On a quad GH200 a peer
    superchip's LPDDR is reached over NVLink and that superchip's C2C (`nvlink_c2c`): no
    published figure yet, so no reference."""
    refs: dict[str, Reference] = {}
    for alloc in PAGE_LOCKED:
        # One size, and the top of each GPU's size sweep (which runs on the nearest node only).
        for suffix in ('', '_peak'):
            refs[f'gpu_numa_c2c_h2d_ce_{alloc}{suffix}_min'] = GH200_H2D_C2C
            refs[f'gpu_numa_c2c_d2h_ce_{alloc}{suffix}_min'] = GH200_D2H_C2C
        for direction in ('h2d', 'd2h'):
            refs[f'gpu_numa_c2c_interconnect_{direction}_ce_{alloc}_min'] = GH200_REMOTE_SOCKET
    return refs


TRANSFER_REFERENCES: dict[str, dict[str, Reference]] = {
    GH200: _gh200_transfers(),
}


def resolve_transfers(perf_vars: Iterable[str], partition=None) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of a transfer check
    (TRANSFER_REFERENCES)."""
    return resolve_in(TRANSFER_REFERENCES, perf_vars, partition)


# ---- nccl-tests all_reduce_perf busbw at the largest size (NcclTestsAllReduce) ------------
# CSCS publishes about 150 GB/s all-reduce busbw at 1 GiB on 2 nodes x 4 GH200 (Slingshot
# between the nodes); kept as a floor with 20 % slack, no upper bound.
NCCL_ALLREDUCE_BUSBW: dict[Key, dict[tuple[int, int], Reference]] = {
    GH200: {(2, 4): (150.0, -0.2, None, 'GB/s')},
}


def resolve_nccl(nodes: int, ranks_per_node: int, partition=None) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for NcclTestsAllReduce's `busbw` on `nodes` x `ranks_per_node`."""
    tables = {key: {'busbw': table[(nodes, ranks_per_node)]}
              for key, table in NCCL_ALLREDUCE_BUSBW.items() if (nodes, ranks_per_node) in table}
    return resolve_in(tables, ['busbw'], partition)


# ---- Latency (reframe_checks/latency.py): lower is better, so an upper bound only -------
#
#     LATENCY_REFERENCES['system:partition'][name] = (reference, None, upper, 'ns')
#
# over the class names of the latency checks: `latency_ns_{pu_kind}_{mem_kind}_{via}_
# {alloc}_{pattern}_max` (MempathChase, MempathChaseSweep: the slowest path of the class,
# median ns per load at the largest size) and `rtt_ns_{a_kind}_{b_kind}_{mem_kind}_{via}_
# {alloc}_max` (the ping-pong checks). `lower` is None: a latency may be as low as it
# likes; `upper` is the fraction above the reference that still passes.
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


def _gh200_latency() -> dict[str, Reference]:
    """By class (latency.CHASE_METRIC: the slowest GPU / socket of a random chase at its
    largest size), for the allocators that keep the pages where they were put."""
    refs: dict[str, Reference] = {
        'latency_ns_gpu_gpu_local_device_random_max': GH200_HOPPER_HBM_NS,   # cudaMalloc
        'latency_ns_gpu_numa_local_numa_random_max': GH200_HOPPER_HBM_NS,    # HBM NUMA node
        'latency_ns_cpu_numa_local_numa_random_max': GH200_GRACE_LPDDR_NS,
        'latency_ns_cpu_numa_c2c_numa_random_max': GH200_GRACE_HBM_NS,
    }
    for alloc in mempath_kinds.HOST_ALLOCATORS:
        refs[f'latency_ns_gpu_numa_c2c_{alloc}_random_max'] = GH200_HOPPER_LPDDR_NS
    return refs


LATENCY_REFERENCES: dict[Key, dict[str, Reference]] = {GH200: _gh200_latency()}


def resolve_latency(perf_vars: Iterable[str], partition=None) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of a latency check
    (LATENCY_REFERENCES)."""
    return resolve_in(LATENCY_REFERENCES, perf_vars, partition)


# ---- Applications: STREAM, GEMM, LLM decode. No published figure of these tools
# ---- on GH200 to seed from: the variables are logged without a band until measured runs
# ---- (docs/results/) give one. Same shape as the tables above.
APPLICATION_REFERENCES: dict[str, dict[str, Reference]] = {}


def resolve_applications(perf_vars: Iterable[str], partition=None) -> dict[str, dict[str, Reference]]:
    return resolve_in(APPLICATION_REFERENCES, perf_vars, partition)

