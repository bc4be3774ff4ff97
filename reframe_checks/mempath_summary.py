"""The `MEMPATH <benchmark> key=value ...` summary lines of docs/schema.md, and the names
the ReFrame checks give to the performance variables derived from them.

Pure Python (no ReFrame import), so that the naming scheme is shared by the checks, the
reference tables and the tests.

Naming scheme (one performance variable per path, the largest thread count of a CPU
thread sweep):

    {pu}_{mem}[_to_{dst}]_{alloc}_{kernel}

e.g. `gpu0_gpu0_device_grid`, `cpu0_numa4_numa_sve`, `cpu0_numa0_to_numa1_numa_avx2`.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Iterable

#: A summary line of any benchmark: the tag, the benchmark, then key=value pairs.
LINE_PATTERN = r'^MEMPATH (?P<bench>\w+) (?P<fields>.*)$'
_LINE_RE = re.compile(LINE_PATTERN)

#: What a performance variable name looks like (for checks on references and listings).
PERF_VAR_PATTERN = (r'(?P<pu>cpus|cpu\d+|gpu\d+)_(?P<mem>numa\d+|gpu\d+)'
                    r'(?:_to_(?P<dst>numa\d+|gpu\d+))?'
                    r'_(?P<alloc>system|numa|device|managed|pinned|registered)'
                    r'_(?P<kernel>grid|block|avx512|avx2|neon|sve|scalar)')
PERF_VAR_RE = re.compile(PERF_VAR_PATTERN)


@dataclass(frozen=True)
class Case:
    """One summary line of `mempath bw`, as far as the checks need it."""

    op: str
    pu: str
    mem: str
    dst: str          # '' unless a copy
    alloc: str
    kernel: str
    threads: int
    status: str
    median_GBps: float | None

    @property
    def perf_var(self) -> str:
        dst = f'_to_{self.dst}' if self.dst else ''
        return f'{self.pu}_{self.mem}{dst}_{self.alloc}_{self.kernel}'


def parse_fields(text: str) -> dict[str, str]:
    """`k=v k=v reason="..."` -> dict; `-` stands for an empty value."""
    fields = {}
    for token in shlex.split(text):
        key, sep, value = token.partition('=')
        if sep:
            fields[key] = '' if value == '-' else value
    return fields


def parse_bw_line(line: str) -> Case | None:
    """The Case of a `MEMPATH bw ...` line, None for any other line."""
    match = _LINE_RE.match(line.strip())
    if not match or match['bench'] != 'bw':
        return None
    f = parse_fields(match['fields'])
    median = f.get('median_GBps')
    return Case(op=f['op'], pu=f['pu'], mem=f['mem'], dst=f.get('dst', ''),
                alloc=f['alloc'], kernel=f.get('kernel', ''),
                threads=int(f.get('threads', '-1')), status=f['status'],
                median_GBps=float(median) if median else None)


def parse_bw_lines(lines: Iterable[str]) -> list[Case]:
    return [c for c in map(parse_bw_line, lines) if c is not None]


def perf_cases(cases: Iterable[Case]) -> dict[str, Case]:
    """Performance variable name -> the case it reports: finished (`ok`) cases only,
    the one with the most threads where a CPU thread sweep gave several."""
    chosen: dict[str, Case] = {}
    for c in cases:
        if c.status != 'ok' or c.median_GBps is None:
            continue
        best = chosen.get(c.perf_var)
        if best is None or c.threads > best.threads:
            chosen[c.perf_var] = c
    return chosen
