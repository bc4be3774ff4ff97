"""The `MEMPATH <benchmark> key=value ...` summary lines of docs/schema.md: their one
parser, and the names the ReFrame checks give to the performance variables derived from
them.

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

# ---- the one parser of summary lines -------------------------------------------------
#
# Every check reads the binary's stdout through `parse_line`: sanity (statuses) and
# performance variables see the same fields, and a line the parser cannot read fails the
# check instead of silently losing its figures.

#: A summary line: the tag, the benchmark, then key=value pairs (values may be quoted).
LINE_PATTERN = r'^MEMPATH (?P<bench>\w+) (?P<fields>.*)$'
_LINE_RE = re.compile(LINE_PATTERN)
_TAG = 'MEMPATH '
#: Values that stand for "no figure" (a skipped case prints none; `-`: an empty field).
_NO_NUMBER = ('', 'nan', '-nan')


class MalformedLine(ValueError):
    """A line that starts with the `MEMPATH ` tag but is no summary line."""


@dataclass(frozen=True)
class SummaryLine:
    """One `MEMPATH <bench> key=value ...` line: its benchmark and its fields in order."""

    bench: str
    fields: dict[str, str]

    @property
    def status(self) -> str:
        return self.fields['status']

    def __getitem__(self, key: str) -> str:
        return self.fields[key]

    def get(self, key: str, default: str = '') -> str:
        return self.fields.get(key, default)

    def number(self, key: str) -> float | None:
        """The field as a number; None where the line has no figure for it."""
        value = self.fields.get(key, '')
        return None if value in _NO_NUMBER else float(value)


def parse_line(line: str) -> SummaryLine | None:
    """The SummaryLine of `line`; None for a line without the `MEMPATH ` tag. Raises
    MalformedLine for a tagged line that has no benchmark, an unclosed quote, a field
    without `=`, a field twice or no `status`."""
    text = line.strip()
    if not (text + ' ').startswith(_TAG):
        return None
    match = _LINE_RE.match(text)
    if not match:
        raise MalformedLine(f'no benchmark and fields: {text!r}')
    try:
        tokens = shlex.split(match['fields'])
    except ValueError as err:
        raise MalformedLine(f'{err}: {text!r}') from None
    fields: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.partition('=')
        if not sep or not key:
            raise MalformedLine(f'field {token!r} is not key=value: {text!r}')
        if key in fields:
            raise MalformedLine(f'field {key!r} given twice: {text!r}')
        fields[key] = '' if value == '-' else value
    if 'status' not in fields:
        raise MalformedLine(f'no status: {text!r}')
    return SummaryLine(match['bench'], fields)


def parse_lines(lines: Iterable[str], bench: str | None = None) -> list[SummaryLine]:
    """The summary lines among `lines` (of `bench` only, where given), in order."""
    parsed = (parse_line(line) for line in lines)
    return [s for s in parsed if s is not None and (bench is None or s.bench == bench)]


def read_summary(path: str, bench: str | None = None) -> list[SummaryLine]:
    """The summary lines of a file (a check's stdout)."""
    with open(path, errors='replace') as f:
        return parse_lines(f, bench)


@dataclass(frozen=True)
class Metric:
    """How a family turns summary lines into performance variables: one variable per
    `name` (a str.format template over the fields), valued by the `field` of an `ok` line.
    Where several lines give one name (a size or thread sweep), the line with the largest
    `keep` field wins (the later one on a tie), or the largest value where `keep` is ''."""

    name: str
    field: str
    unit: str
    keep: str = 'size'

    def values(self, lines: Iterable[SummaryLine]) -> dict[str, tuple[float, str]]:
        chosen: dict[str, tuple[float, float]] = {}    # name -> (rank, value)
        for s in lines:
            value = s.number(self.field) if s.status == 'ok' else None
            if value is None:       # skipped, failed, or a line without the figure
                continue
            name = self.name.format(**s.fields)
            rank = float(s.get(self.keep) or 0) if self.keep else value
            if name not in chosen or rank >= chosen[name][0]:
                chosen[name] = (rank, value)
        return {name: (value, self.unit) for name, (_, value) in sorted(chosen.items())}


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
    via: str = ''     # the links of the path (`local`, `c2c`, `c2c+interconnect`, ...)

    @property
    def path(self) -> tuple[str, str, str, str]:
        """The path whatever the kernel and threads: processor, memory, destination, allocator."""
        return (self.pu, self.mem, self.dst, self.alloc)

    @property
    def perf_var(self) -> str:
        dst = f'_to_{self.dst}' if self.dst else ''
        return f'{self.pu}_{self.mem}{dst}_{self.alloc}_{self.kernel}'


def bw_case(s: SummaryLine) -> Case:
    """The Case of a `MEMPATH bw ...` summary line."""
    return Case(op=s['op'], pu=s['pu'], mem=s['mem'], dst=s.get('dst'), alloc=s['alloc'],
                kernel=s.get('kernel'), threads=int(s.get('threads', '-1')), status=s.status,
                median_GBps=s.number('median_GBps'), via=s.get('via'))


def parse_bw_lines(lines: Iterable[str]) -> list[Case]:
    """The Case of every `MEMPATH bw ...` line among `lines`."""
    return [bw_case(s) for s in parse_lines(lines, 'bw')]


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


# ---- classes of paths: what a check reports of a large node ------------------------------
#
# A quad-GH200 node has ~1,300 bandwidth paths; a centre's dashboard wants a few numbers per
# check, and the detail is in the HDF5 file. Paths fall into classes by the fields of their
# summary lines: the kind of processor (`cpu`, `cpus`: every CPU node, `gpu`), the kind of
# each memory by name (`numa`, `gpu`), the links (`via`) and the allocator. A class reports
# its weakest member (the minimum over GPUs / sockets of each path's best kernel), named
#
#     {pu_kind}_{mem_kind}[_to_{dst_kind}]_{via}_{alloc}_min     e.g. gpu_numa_c2c_pinned_min
#
# (`via` with `+` written `_`: `cpu_numa_c2c_interconnect_numa_min`).

#: The most performance variables one check reports.
MAX_PERF_VARS = 30

CLASS_VAR_PATTERN = (r'(?P<pu_kind>cpus|cpu|gpu)_(?P<mem_kind>numa|gpu)'
                     r'(?:_to_(?P<dst_kind>numa|gpu))?_(?P<via>[a-z0-9_]+?)'
                     r'_(?P<alloc>system|numa|device|managed|pinned|registered)_min')
CLASS_VAR_RE = re.compile(CLASS_VAR_PATTERN)


def _kind(name: str) -> str:
    return name if name == 'cpus' else name.rstrip('0123456789')


def path_class(c: Case) -> str:
    """The class variable a bandwidth case counts in (CLASS_VAR_PATTERN)."""
    dst = f'_to_{_kind(c.dst)}' if c.dst else ''
    via = re.sub(r'[^a-z0-9]+', '_', (c.via or 'unknown').lower()).strip('_')
    return f'{_kind(c.pu)}_{_kind(c.mem)}{dst}_{via}_{c.alloc}_min'


def class_minima(cases: Iterable[Case]) -> dict[str, Case]:
    """Class variable -> its weakest path (the case of the smallest median), each path
    counted at its best kernel and largest thread count (`perf_cases`)."""
    best: dict[tuple[str, str, str, str], Case] = {}
    for c in perf_cases(cases).values():
        held = best.get(c.path)
        if held is None or c.median_GBps > held.median_GBps:
            best[c.path] = c
    weakest: dict[str, Case] = {}
    for c in best.values():
        name = path_class(c)
        if name not in weakest or c.median_GBps < weakest[name].median_GBps:
            weakest[name] = c
    return weakest


# ---- `mempath memcpy`: host<->device transfers (docs/schema.md, "/memcpy summary lines") --
#
# Naming scheme of the transfer checks (reframe_checks/transfers.py), one variable per
# (GPU, host node, direction, engine, allocator):
#
#     {gpu}_{mem}_{direction}_{engine}_{alloc}[_{metric}]
#
#   gpu        gpuN, or `gpus` for an --all-gpus case (every GPU at once, `gpu=all`)
#   mem        numaN: the host buffer's node; `numas` when the GPUs of an --all-gpus case
#              use several nodes (host_numa=-1: by default each GPU its nearest)
#   direction  h2d, d2h, bidir (the sum of both streams), bidir_h2d / bidir_d2h (each
#              direction while both run)
#   metric     none: median GB/s at the check's one size; `peak`: the largest median of a
#              size sweep (GB/s); `sat`: the sweep's saturation size (MiB); `lat{size}`:
#              latency median at that size (us), `lat{size}_p99` its 99th percentile
#
# e.g. `gpu0_numa0_h2d_ce_pinned`, `gpu0_numa1_bidir_d2h_sm_registered`,
# `gpus_numas_d2h_ce_pinned`, `gpu3_numa3_h2d_ce_pinned_peak`, `gpu0_numa0_d2h_ce_pinned_lat4B`.

TRANSFER_VAR_PATTERN = (r'(?P<gpu>gpu\d+|gpus)_(?P<mem>numa\d+|numas)'
                        r'_(?P<direction>h2d|d2h|bidir(?:_h2d|_d2h)?)'
                        r'_(?P<engine>ce|sm)_(?P<alloc>pinned|registered|system|managed)'
                        r'(?:_(?P<metric>peak|sat|lat\d+(?:B|KiB|MiB|GiB)(?:_p99)?))?')
TRANSFER_VAR_RE = re.compile(TRANSFER_VAR_PATTERN)

#: Units of the transfer variables.
GBPS, US, MIB = 'GB/s', 'us', 'MiB'


def size_label(size: int) -> str:
    """4 -> '4B', 4096 -> '4KiB', 1 << 30 -> '1GiB'; sizes that are no whole multiple of a
    unit stay in bytes."""
    for unit, shift in (('GiB', 30), ('MiB', 20), ('KiB', 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f'{size >> shift}{unit}'
    return f'{size}B'


@dataclass(frozen=True)
class Transfer:
    """One summary line of `mempath memcpy`, as far as the checks need it."""

    mode: str                 # bandwidth or latency
    gpu: str                  # '0', '1', ... or 'all'
    host_numa: int            # -1: several nodes (an --all-gpus case)
    alloc: str
    direction: str            # h2d, d2h, bidir
    engine: str               # ce, sm
    size: int
    status: str
    median_GBps: float | None = None
    h2d_median_GBps: float | None = None
    d2h_median_GBps: float | None = None
    saturation_bytes: int = -1
    median_us: float | None = None
    p99_us: float | None = None

    @property
    def perf_var(self) -> str:
        """The base name `{gpu}_{mem}_{direction}_{engine}_{alloc}`."""
        gpu = 'gpus' if self.gpu == 'all' else f'gpu{self.gpu}'
        mem = 'numas' if self.host_numa < 0 else f'numa{self.host_numa}'
        return f'{gpu}_{mem}_{self.direction}_{self.engine}_{self.alloc}'

    def part_var(self, part: str) -> str:
        """A bidir case's variable for one of its directions (`part` = h2d or d2h)."""
        base = self.perf_var
        head, _, tail = base.partition('_bidir_')
        return f'{head}_bidir_{part}_{tail}'


def transfer(s: SummaryLine) -> Transfer:
    """The Transfer of a `MEMPATH memcpy ...` summary line."""
    sat = s.get('saturation_bytes')
    return Transfer(mode=s['mode'], gpu=s['gpu'], host_numa=int(s.get('host_numa', '-1')),
                    alloc=s['alloc'], direction=s['direction'], engine=s['engine'],
                    size=int(s['size']), status=s.status,
                    median_GBps=s.number('median_GBps'),
                    h2d_median_GBps=s.number('h2d_median_GBps'),
                    d2h_median_GBps=s.number('d2h_median_GBps'),
                    saturation_bytes=int(sat) if sat else -1,
                    median_us=s.number('median_us'), p99_us=s.number('p99_us'))


def parse_memcpy_lines(lines: Iterable[str]) -> list[Transfer]:
    """The Transfer of every `MEMPATH memcpy ...` line among `lines`."""
    return [transfer(s) for s in parse_lines(lines, 'memcpy')]


def transfer_perf_values(transfers: Iterable[Transfer], kind: str,
                         latency_sizes: Iterable[int] | None = None
                         ) -> dict[str, tuple[float, str]]:
    """Performance variable name -> (value, unit) of a transfer check; finished (`ok`)
    cases only, the first line of a name where several give it.

    kind: `bandwidth` (one size: median GB/s, bidir also per direction), `sweep` (per
    sweep group: `_peak` GB/s, and `_sat` MiB where a saturation size was found) or
    `latency` (`_lat{size}` and `_lat{size}_p99` in us, for `latency_sizes` or every size).
    """
    if kind not in ('bandwidth', 'sweep', 'latency'):
        raise ValueError(f'unknown transfer check kind {kind!r}')
    sizes = None if latency_sizes is None else set(latency_sizes)
    values: dict[str, tuple[float, str]] = {}

    def put(name: str, value: float | None, unit: str) -> None:
        if value is not None and name not in values:
            values[name] = (value, unit)

    peaks: dict[str, float] = {}
    for t in transfers:
        if t.status != 'ok':
            continue
        if kind == 'latency':
            if t.mode != 'latency' or (sizes is not None and t.size not in sizes):
                continue
            name = f'{t.perf_var}_lat{size_label(t.size)}'
            put(name, t.median_us, US)
            put(f'{name}_p99', t.p99_us, US)
        elif t.mode != 'bandwidth' or t.median_GBps is None:
            continue
        elif kind == 'bandwidth':
            put(t.perf_var, t.median_GBps, GBPS)
            if t.direction == 'bidir':
                put(t.part_var('h2d'), t.h2d_median_GBps, GBPS)
                put(t.part_var('d2h'), t.d2h_median_GBps, GBPS)
        else:
            peaks[t.perf_var] = max(peaks.get(t.perf_var, 0.0), t.median_GBps)
            if t.saturation_bytes > 0:
                put(f'{t.perf_var}_sat', t.saturation_bytes / (1 << 20), MIB)
    for name, peak in peaks.items():
        put(f'{name}_peak', peak, GBPS)
    return dict(sorted(values.items()))
