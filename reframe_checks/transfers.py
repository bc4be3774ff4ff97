"""Host<->device transfers: `mempath memcpy`, valid only on NVIDIA GPU partitions (`+nvgpu`).

The measurement is the binary's (docs/cli.md, docs/methodology.md); these checks launch
it, keep the HDF5 file and turn the `MEMPATH memcpy ...` summary lines (docs/schema.md)
into one performance variable per (GPU, host node, direction, engine, allocator), named
`{gpu}_{mem}_{direction}_{engine}_{alloc}[_{metric}]` (mempath_summary.py). References:
references.py (TRANSFER_REFERENCES).

    MempathTransferBandwidth %coverage=acceptance   (tag acceptance)
        --gpu all --alloc pinned --engine ce --size 1GiB: h2d, d2h, bidir per GPU
    MempathTransferLatency %coverage=acceptance     (tag acceptance)
        --gpu all --alloc pinned --latency: variables at 4 B
    MempathTransferBandwidth %coverage=full         (tag full)
        --gpu all --mem all, every allocator and engine, 1 GiB
    MempathTransferAllGpus                          (tag full)
        --all-gpus, every allocator and engine, 1 GiB
    MempathTransferSweep                            (tag full)
        --gpu all --sweep (4 KiB .. 4 GiB), every allocator and engine
    MempathTransferLatency %coverage=full           (tag full)
        --gpu all --latency, every allocator, variables at every size (4 B .. 1 MiB)

Each check also has the tags `gpu` and `transfers`. Directions: `--direction h2d,d2h,bidir`
(bidir: both at once), latency `h2d,d2h`, named explicitly (GPU<->GPU directions are
another family's). The acceptance checks are
a subset of the full ones, so they are not tagged `full`: `--tag full` runs every case once.

Variables (set with `-S CHECK.NAME=VALUE`): gpus, mems, allocs, engines, directions (the
`--gpu`, `--mem`, `--alloc`, `--engine`, `--direction` lists; unset: the check's default
above, empty: the option left out, i.e. the binary's default), reps, warmup,
extra_options; size (bandwidth, all-GPUs), max_size (sweep), report_sizes (latency: the
sizes in bytes that get variables).
"""
from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   sanity_function, variable)

import mempath_run
import mempath_summary
import references
from mempath_build import MempathBuild

#: The binary's memcpy needs CUDA and a GPU.
VALID_SYSTEMS = ['+nvgpu']
#: Every allocator and engine of `mempath memcpy` (the `full` coverage).
ALL_ALLOCS = 'pinned,registered,system,managed'
ALL_ENGINES = 'ce,sm'
#: The acceptance (nightly) size of a one-size bandwidth check.
ACCEPTANCE_SIZE = '1GiB'
#: Host<->device directions, named rather than left to the binary's default (which a
#: GPU<->GPU direction must never join unnoticed: these names have no GPU destination).
BW_DIRECTIONS = 'h2d,d2h,bidir'
LATENCY_DIRECTIONS = 'h2d,d2h'
#: `mempath memcpy` list options and the check variables that set them.
LIST_OPTIONS = (('--gpu', 'gpus'), ('--mem', 'mems'), ('--alloc', 'allocs'),
                ('--engine', 'engines'), ('--direction', 'directions'))


class MempathTransferBase(rfm.RunOnlyRegressionTest, mempath_run.WholeNode):
    """`mempath memcpy ... --output memcpy.h5`: sanity, kept file and variables."""

    #: What the variables are made of: bandwidth, sweep or latency
    #: (mempath_summary.transfer_perf_values).
    kind = 'bandwidth'
    #: Per coverage: the defaults of the list variables (None or unset: these).
    DEFAULTS: dict[str, dict[str, str]] = {}

    #: `--gpu` list (N, gpuN, all); None: the coverage's default (`all`).
    gpus = variable(str, type(None), value=None)
    #: `--mem` list (numaN, all); None: the coverage's default ('': each GPU's nearest).
    mems = variable(str, type(None), value=None)
    #: `--alloc` list; None: the coverage's default.
    allocs = variable(str, type(None), value=None)
    #: `--engine` list (ce, sm); None: the coverage's default.
    engines = variable(str, type(None), value=None)
    #: `--direction` list (h2d, d2h, bidir); None: the coverage's default (all of them).
    directions = variable(str, type(None), value=None)
    #: Timed and discarded repetitions (`--reps`, `--warmup`); None: the binary's.
    reps = variable(int, type(None), value=None)
    warmup = variable(int, type(None), value=None)
    #: Any further `mempath memcpy` options.
    extra_options = variable(typ.List[str], value=[])

    output_file = 'memcpy.h5'
    valid_systems = VALID_SYSTEMS
    valid_prog_environs = ['*']
    num_tasks = 1
    num_tasks_per_node = 1
    exclusive_access = True
    keep_files = [output_file]
    maintainers = ['mempath']
    # One limit per class, also where `coverage` makes it acceptance: a hook choosing by
    # coverage would overwrite a site's `-S time_limit=...`.
    time_limit = mempath_run.FULL_TIME_LIMIT

    mempath = fixture(MempathBuild, scope='environment')

    @property
    def scope(self) -> str:
        """acceptance or full: the `coverage` parameter where a check has both."""
        return getattr(self, 'coverage', 'full')

    @run_after('init')
    def set_scope(self):
        self.tags = {self.scope, 'gpu', 'transfers'}

    def list_option(self, name: str) -> str:
        value = getattr(self, name)
        return self.DEFAULTS[self.scope].get(name, '') if value is None else value

    def mode_options(self) -> list[str]:
        """The options that pick the mode and sizes (`--size`, `--sweep`, `--latency`)."""
        raise NotImplementedError

    @run_before('run')
    def set_command(self):
        self.executable = self.mempath.executable_path
        opts = ['memcpy', *self.mode_options()]
        for flag, name in LIST_OPTIONS:
            value = self.list_option(name)
            if value:
                opts += [flag, value]
        for flag, value in (('--reps', self.reps), ('--warmup', self.warmup)):
            if value is not None:
                opts += [flag, str(value)]
        self.executable_opts = opts + ['--output', self.output_file, *self.extra_options]

    @sanity_function
    def cases_ran(self):
        return mempath_run.ran_ok(self, 'memcpy', self.output_file)

    def latency_sizes(self) -> list[int] | None:
        return None

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():     # nothing ran, nothing to read (`reframe --dry-run`)
            return
        stdout = os.path.join(self.stagedir, str(self.stdout))   # hooks run elsewhere
        lines = sn.evaluate(sn.extractall(mempath_summary.LINE_PATTERN, stdout, 0))
        values = mempath_summary.transfer_perf_values(
            mempath_summary.parse_memcpy_lines(lines), self.kind, self.latency_sizes())
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in values.items()
        }
        self.reference = references.resolve_transfers(self.perf_variables)


@rfm.simple_test
class MempathTransferBandwidth(MempathTransferBase):
    """Each GPU in turn, h2d, d2h and bidir at one size (median GB/s; bidir also per
    direction). acceptance: copy engine, pinned memory on the GPU's nearest node; full:
    every host node, allocator and engine."""

    coverage = parameter(['acceptance', 'full'])
    kind = 'bandwidth'
    DEFAULTS = {
        'acceptance': {'gpus': 'all', 'allocs': 'pinned', 'engines': 'ce',
                       'directions': BW_DIRECTIONS},
        'full': {'gpus': 'all', 'mems': 'all', 'allocs': ALL_ALLOCS, 'engines': ALL_ENGINES,
                 'directions': BW_DIRECTIONS},
    }
    #: Bytes per transfer (`--size`).
    size = variable(str, value=ACCEPTANCE_SIZE)

    @run_after('init')
    def describe(self):
        self.descr = f'mempath memcpy: host<->device bandwidth at one size ({self.coverage})'

    def mode_options(self) -> list[str]:
        return ['--size', self.size]


@rfm.simple_test
class MempathTransferAllGpus(MempathTransferBase):
    """Every GPU to/from its own nearest host memory at once (`--all-gpus`): variables
    `gpus_numas_...`, the sum over the GPUs."""

    kind = 'bandwidth'
    DEFAULTS = {'full': {'allocs': ALL_ALLOCS, 'engines': ALL_ENGINES,
                         'directions': BW_DIRECTIONS}}
    size = variable(str, value=ACCEPTANCE_SIZE)

    @run_after('init')
    def describe(self):
        self.descr = 'mempath memcpy --all-gpus: every GPU at once'

    def mode_options(self) -> list[str]:
        return ['--all-gpus', '--size', self.size]


@rfm.simple_test
class MempathTransferSweep(MempathTransferBase):
    """Transfer-size sweep 4 KiB .. max_size per GPU, allocator, direction and engine:
    `_peak` (the largest median, GB/s) and `_sat` (the saturation size, MiB)."""

    kind = 'sweep'
    DEFAULTS = {'full': {'gpus': 'all', 'allocs': ALL_ALLOCS, 'engines': ALL_ENGINES,
                         'directions': BW_DIRECTIONS}}
    #: Largest size of the sweep (`--max-size`); empty: the binary's (4 GiB, or what fits).
    max_size = variable(str, value='')

    @run_after('init')
    def describe(self):
        self.descr = 'mempath memcpy --sweep: bandwidth against transfer size, saturation size'

    def mode_options(self) -> list[str]:
        return ['--sweep', *(['--max-size', self.max_size] if self.max_size else [])]


@rfm.simple_test
class MempathTransferLatency(MempathTransferBase):
    """Small-transfer latency (cudaMemcpyAsync + synchronise as the host sees it), h2d and
    d2h, copy engine: `_lat{size}` median and `_lat{size}_p99`, in us. acceptance: pinned
    memory, 4 B reported; full: every allocator, every size 4 B .. 1 MiB reported."""

    coverage = parameter(['acceptance', 'full'])
    kind = 'latency'
    DEFAULTS = {
        'acceptance': {'gpus': 'all', 'allocs': 'pinned', 'directions': LATENCY_DIRECTIONS},
        'full': {'gpus': 'all', 'allocs': ALL_ALLOCS, 'directions': LATENCY_DIRECTIONS},
    }
    #: Sizes (bytes) that get variables; None: 4 B for acceptance, every size for full.
    report_sizes = variable(typ.List[int], type(None), value=None)

    @run_after('init')
    def describe(self):
        self.descr = f'mempath memcpy --latency: small-transfer latency ({self.coverage})'

    def mode_options(self) -> list[str]:
        return ['--latency']

    def latency_sizes(self) -> list[int] | None:
        if self.report_sizes is not None:
            return list(self.report_sizes)
        return [4] if self.coverage == 'acceptance' else None
