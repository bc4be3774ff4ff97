"""The `MEMPATH <benchmark> key=value ...` summary lines of docs/schema.md: their one
parser, and the names the ReFrame checks give to the performance variables derived from
them.

Pure Python (no ReFrame import), so that the naming scheme is shared by the checks, the
reference tables and the tests.

Performance variables are per class of path (a few per check, however large the node;
every path stays in the HDF5 file): the bandwidth classes below (`class_minima`), the
ClassMetric of the other families and the transfer classes (`transfer_perf_values`); the
LLM decode, a few cases a check, one variable per case (`LlmMetric`).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Iterable

import mempath_kinds

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

    def chosen(self, lines: Iterable[SummaryLine]) -> dict[str, tuple[float, SummaryLine]]:
        """Name -> (value, the line it came from), by the rule above."""
        chosen: dict[str, tuple[float, float, SummaryLine]] = {}    # name -> (rank, value, line)
        for s in lines:
            value = s.number(self.field) if s.status == 'ok' else None
            if value is None:       # skipped, failed, or a line without the figure
                continue
            name = self.name.format(**s.fields)
            rank = float(s.get(self.keep) or 0) if self.keep else value
            if name not in chosen or rank >= chosen[name][0]:
                chosen[name] = (rank, value, s)
        return {name: (value, s) for name, (_, value, s) in sorted(chosen.items())}

    def values(self, lines: Iterable[SummaryLine]) -> dict[str, tuple[float, str]]:
        return {name: (value, self.unit) for name, (value, _) in self.chosen(lines).items()}


#: What a performance variable name looks like (for checks on references and listings).
PERF_VAR_PATTERN = (r'(?P<pu>cpus|cpu\d+|gpu\d+)_(?P<mem>numa\d+|gpu\d+)'
                    r'(?:_to_(?P<dst>numa\d+|gpu\d+))?'
                    r'_(?P<alloc>system|numa|device|managed|pinned|registered)'
                    r'_(?P<kernel>grid|block|avx512|avx2|neon|sve|scalar)')
PERF_VAR_RE = re.compile(PERF_VAR_PATTERN)


def stayed(s: SummaryLine) -> bool:
    """The line's pages stayed in the memory it names: its `placed` field (the binary's
    rule, C++ placed_as_named, the report's too) is not 0. A managed buffer that a GPU
    pulled into HBM, or a CPU into host memory, would otherwise give a class the other
    memory's figure (3,083 GB/s as "host memory over PCIe" on an H100). Lines without
    the field (older binaries, families that keep their pages) count."""
    return s.get('placed') != '0'


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
    via: str = ''     # the links of the path (`local`, `c2c`, `nvlink+c2c`, ...)
    placed: bool = True   # the pages stayed in `mem` (`stayed`)

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
                median_GBps=s.number('median_GBps'), via=s.get('via'), placed=stayed(s))


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
                     r'(?:_to_(?P<dst_kind>numa|gpu))?'
                     r'_(?P<via>(?:local|unknown|c2c|pcie|nvlink|interconnect|spread|interleave)'
                     r'(?:_(?:c2c|pcie|nvlink|interconnect|spread))*)'
                     r'_(?P<alloc>system|numa|device|managed|pinned|registered)_min')
CLASS_VAR_RE = re.compile(CLASS_VAR_PATTERN)


def _kind(name: str) -> str:
    return name if name == 'cpus' else name.rstrip('0123456789')


def _via_name(via: str) -> str:
    return re.sub(r'[^a-z0-9]+', '_', (via or 'unknown').lower()).strip('_')


def path_class(c: Case) -> str:
    """The class variable a bandwidth case counts in (CLASS_VAR_PATTERN)."""
    dst = f'_to_{_kind(c.dst)}' if c.dst else ''
    return f'{_kind(c.pu)}_{_kind(c.mem)}{dst}_{_via_name(c.via)}_{c.alloc}_min'


def class_extremes(items: Iterable[tuple[str, float, object]], worst: str = 'min'
                   ) -> dict[str, tuple[float, object]]:
    """Class name -> (value, item) of its worst member among (class, value, item) triples:
    the smallest value (`min`: throughputs) or the largest (`max`: latencies)."""
    if worst not in ('min', 'max'):
        raise ValueError(f'worst is min or max, not {worst!r}')
    better = (lambda a, b: a < b) if worst == 'min' else (lambda a, b: a > b)
    out: dict[str, tuple[float, object]] = {}
    for name, value, item in items:
        if name not in out or better(value, out[name][0]):
            out[name] = (value, item)
    return dict(sorted(out.items()))


def class_minima(cases: Iterable[Case]) -> dict[str, Case]:
    """Class variable -> its weakest path (the case of the smallest median), each path
    counted at its best kernel and largest thread count (`perf_cases`), where its pages
    stayed in the memory it names (`stayed`)."""
    best: dict[tuple[str, str, str, str], Case] = {}
    for c in perf_cases(c for c in cases if c.placed).values():
        held = best.get(c.path)
        if held is None or c.median_GBps > held.median_GBps:
            best[c.path] = c
    weakest = class_extremes((path_class(c), c.median_GBps, c) for c in best.values())
    return {name: c for name, (_, c) in weakest.items()}


#: Allocators by what a copy engine sees of them (ClassMetric's `{alloc}_class` fields),
#: from kinds.def's columns (mempath_kinds.py).
ALLOC_CLASS = mempath_kinds.ALLOC_CLASS


def class_fields(fields: dict[str, str]) -> dict[str, str]:
    """A line's fields and what class names are made of: `{key}_kind` of every field
    (`gpu3` -> `gpu`, `numa12` -> `numa`; `cpus` stays), `{key}_class` of an allocator
    field (ALLOC_CLASS), and `via` with its links joined by `_` (`c2c_interconnect`)."""
    out = dict(fields)
    for key, value in fields.items():
        out[f'{key}_kind'] = _kind(value)
        if key.endswith('alloc'):
            out[f'{key}_class'] = ALLOC_CLASS.get(value, value)
    out['via'] = _via_name(fields.get('via', ''))
    return out


@dataclass(frozen=True)
class ClassMetric:
    """One performance variable per class of path, for the families whose summary lines
    name a processor, a memory and their links: `path` (a Metric) gives each path its
    value (a size or thread sweep collapsing by its rule), `name` (a template over
    `class_fields`) the class the path counts in, and the class reports its worst path
    (`worst`: `min` for throughputs, `max` for latencies), named `{name}_{worst}`. A line
    counts only where its pages stayed (`stayed`)."""

    path: Metric
    name: str
    worst: str = 'min'
    #: (field, values): only lines whose field has one of these values count (e.g. STREAM's
    #: copy and triad); None: every line.
    only: tuple[str, tuple[str, ...]] | None = None
    #: (field, other field) pairs that must agree for a line to count, a line without the
    #: other field agreeing (gemm: B in A's placement, `mem`/`b_mem`; a pair of placements
    #: is no class of one path, and lines of older binaries carry no `b_mem`).
    same: tuple[tuple[str, str], ...] = ()

    @property
    def unit(self) -> str:
        return self.path.unit

    def values(self, lines: Iterable[SummaryLine]) -> dict[str, tuple[float, str]]:
        if self.only:
            key, allowed = self.only
            lines = [s for s in lines if s.get(key) in allowed]
        lines = [s for s in lines if stayed(s)
                 and all(s.get(other, s.get(key)) == s.get(key) for key, other in self.same)]
        members = ((f'{self.name.format(**class_fields(s.fields))}_{self.worst}', value, s)
                   for value, s in self.path.chosen(lines).values())
        return {name: (value, self.unit)
                for name, (value, _) in class_extremes(members, self.worst).items()}


# ---- `mempath memcpy`: host<->device transfers (docs/schema.md, "/memcpy summary lines") --
#
# The transfer checks (reframe_checks/transfers.py) report classes too: one variable per
# (links, direction, engine, allocator), the weakest GPU of it (the slowest, or for a
# latency the largest):
#
#     {gpu}_numa_{via}_{direction}_{engine}_{alloc}[_{metric}]_{min|max}
#
#   gpu        `gpu`: each GPU on its own, `gpus`: an --all-gpus case (every GPU at once)
#   via        the links between the host node and the GPU (`c2c`, `c2c_interconnect`,
#              `pcie`, `pcie_interconnect`): the GPU's own node and the others apart
#   direction  h2d, d2h, bidir (the sum of both streams), bidir_h2d / bidir_d2h (each
#              direction while both run; one-size checks at acceptance coverage only)
#   metric     none: median GB/s at the check's one size (`_min`); `peak`: the largest
#              median of each GPU's size sweep (`_min`); `lat{size}`: latency median at
#              that size (us, `_max`), `lat{size}_p99` its 99th percentile
#
# e.g. `gpu_numa_c2c_h2d_ce_pinned_min`, `gpu_numa_c2c_interconnect_bidir_sm_system_min`,
# `gpus_numa_c2c_d2h_ce_pinned_min`, `gpu_numa_c2c_h2d_ce_pinned_peak_min`,
# `gpu_numa_c2c_d2h_ce_pinned_lat4B_max`. Every GPU, node and size stays in memcpy.h5.

TRANSFER_VAR_PATTERN = (r'(?P<gpu>gpus?)_numa_(?P<via>[a-z0-9_]+?)'
                        r'_(?P<direction>h2d|d2h|bidir(?:_h2d|_d2h)?)'
                        r'_(?P<engine>ce|sm)_(?P<alloc>pinned|registered|system|managed)'
                        r'(?:_(?P<metric>peak|lat\d+(?:B|KiB|MiB|GiB)(?:_p99)?))?_(?:min|max)')
TRANSFER_VAR_RE = re.compile(TRANSFER_VAR_PATTERN)

#: Units of the transfer variables.
GBPS, US = 'GB/s', 'us'


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
    median_us: float | None = None
    p99_us: float | None = None
    via: str = ''             # the links between the host node and the GPU

    @property
    def group(self) -> tuple:
        """What a size sweep varies over: the GPU, node, direction, engine, allocator."""
        return (self.gpu, self.host_numa, self.direction, self.engine, self.alloc)

    @property
    def class_var(self) -> str:
        """The class base name `{gpu}_numa_{via}_{direction}_{engine}_{alloc}`."""
        gpu = 'gpus' if self.gpu == 'all' else 'gpu'
        return f'{gpu}_numa_{_via_name(self.via)}_{self.direction}_{self.engine}_{self.alloc}'

    def part_var(self, part: str) -> str:
        """A bidir case's class for one of its directions (`part` = h2d or d2h)."""
        head, _, tail = self.class_var.partition('_bidir_')
        return f'{head}_bidir_{part}_{tail}'


def transfer(s: SummaryLine) -> Transfer:
    """The Transfer of a `MEMPATH memcpy ...` summary line."""
    return Transfer(mode=s['mode'], gpu=s['gpu'], host_numa=int(s.get('host_numa', '-1')),
                    alloc=s['alloc'], direction=s['direction'], engine=s['engine'],
                    size=int(s['size']), status=s.status,
                    median_GBps=s.number('median_GBps'),
                    h2d_median_GBps=s.number('h2d_median_GBps'),
                    d2h_median_GBps=s.number('d2h_median_GBps'),
                    median_us=s.number('median_us'), p99_us=s.number('p99_us'),
                    via=s.get('via'))


def parse_memcpy_lines(lines: Iterable[str]) -> list[Transfer]:
    """The Transfer of every `MEMPATH memcpy ...` line among `lines`."""
    return [transfer(s) for s in parse_lines(lines, 'memcpy')]


def transfer_perf_values(transfers: Iterable[Transfer], kind: str,
                         latency_sizes: Iterable[int] | None = None, parts: bool = True
                         ) -> dict[str, tuple[float, str]]:
    """Class variable -> (value, unit) of a transfer check, `ok` cases only.

    kind: `bandwidth` (one size: the slowest GPU's median GB/s per class, with `parts` also
    each direction of a bidir case), `sweep` (each GPU's largest median over the sizes, then
    the class's slowest: `_peak_min`) or `latency` (`_lat{size}_max` and
    `_lat{size}_p99_max` in us, for `latency_sizes` or every size).
    """
    if kind not in ('bandwidth', 'sweep', 'latency'):
        raise ValueError(f'unknown transfer check kind {kind!r}')
    sizes = None if latency_sizes is None else set(latency_sizes)
    slowest: list[tuple[str, float, Transfer]] = []     # GB/s: the class's minimum
    largest: list[tuple[str, float, Transfer]] = []     # us: the class's maximum
    peaks: dict[tuple, tuple[float, Transfer]] = {}
    for t in transfers:
        if t.status != 'ok':
            continue
        if kind == 'latency':
            if t.mode != 'latency' or (sizes is not None and t.size not in sizes):
                continue
            name = f'{t.class_var}_lat{size_label(t.size)}'
            largest += [(f'{n}_max', v, t) for n, v in ((name, t.median_us),
                                                       (f'{name}_p99', t.p99_us))
                        if v is not None]
        elif t.mode != 'bandwidth' or t.median_GBps is None:
            continue
        elif kind == 'bandwidth':
            slowest.append((f'{t.class_var}_min', t.median_GBps, t))
            if parts and t.direction == 'bidir':
                slowest += [(f'{t.part_var(p)}_min', v, t) for p, v in
                            (('h2d', t.h2d_median_GBps), ('d2h', t.d2h_median_GBps))
                            if v is not None]
        elif t.group not in peaks or t.median_GBps > peaks[t.group][0]:
            peaks[t.group] = (t.median_GBps, t)
    slowest += [(f'{t.class_var}_peak_min', v, t) for v, t in peaks.values()]
    values = {name: (v, GBPS) for name, (v, _) in class_extremes(slowest, 'min').items()}
    values.update({name: (v, US) for name, (v, _) in class_extremes(largest, 'max').items()})
    return dict(sorted(values.items()))


# ---- `mempath llm`: the decode's tokens/s (docs/schema.md, "/llm/cases") -----------------
#
# A few cases a check (a paper step: one model, five placements), so one variable per case
# and figure, of `ok` lines only:
#
#     tokens_per_s_{case}         median decode tokens/s (median_tokens_per_s)
#     fraction_of_bound_{case}    that over the bound of the case's measured paths
#
# {case}: the placement (`hbm`, `host-remote`, `default`, `pinned:numa1`), or for an
# offloaded case `offload_{way}_{layers}[_{offload memory}]`. Every repetition stays in the
# HDF5 file.

#: (variable prefix, summary field, unit) of each figure of an llm line.
LLM_FIGURES = (('tokens_per_s', 'median_tokens_per_s', 'tokens/s'),
               ('fraction_of_bound', 'fraction_of_bound', ''))


def llm_case(s: SummaryLine) -> str:
    """The case part of an llm variable's name (above)."""
    if s.get('placement') != 'offload':
        return s.get('placement')
    return '_'.join(p for p in ('offload', s.get('way'), s.get('offload_layers'), s.get('offload_mem')) if p)


@dataclass(frozen=True)
class LlmMetric:
    """The variables of `MEMPATH llm` lines: LLM_FIGURES of each ok case."""

    def values(self, lines: Iterable[SummaryLine]) -> dict[str, tuple[float, str]]:
        out: dict[str, tuple[float, str]] = {}
        for s in lines:
            if s.status != 'ok':
                continue
            for prefix, field, unit in LLM_FIGURES:
                value = s.number(field)
                if value is not None:
                    out[f'{prefix}_{llm_case(s)}'] = (value, unit)
        return dict(sorted(out.items()))
