"""Reference bandwidths of the mempath checks, kept apart from the test logic.

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

Reference = tuple[float, float, float, str]

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


def resolve(op: str, perf_vars: Iterable[str]) -> dict[str, dict[str, Reference]]:
    """ReFrame's `reference` for the given variables of an `op` check: for each
    system:partition, every variable that a pattern matches (first pattern wins)."""
    names = list(perf_vars)
    resolved: dict[str, dict[str, Reference]] = {}
    for syspart, patterns in REFERENCES.get(op, {}).items():
        table: dict[str, Reference] = {}
        for name in names:
            for pattern, ref in patterns.items():
                if fnmatch.fnmatchcase(name, pattern):
                    table[name] = ref
                    break
        if table:
            resolved[syspart] = table
    return resolved
