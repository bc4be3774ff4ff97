"""Host<->device transfers: `mempath memcpy`, valid only on NVIDIA GPU partitions (`+nvgpu`).

The measurement is the binary's (docs/cli.md, docs/methodology.md); these checks launch
it, keep the HDF5 file and turn the `MEMPATH memcpy ...` summary lines (docs/schema.md)
into one performance variable per class of transfer (links, direction, engine, allocator:
the weakest GPU of it), named `{gpu}_numa_{via}_{direction}_{engine}_{alloc}[_{metric}]_
{min|max}` (mempath_summary.py). References: references.py (TRANSFER_REFERENCES).

    MempathTransferBandwidth %coverage=acceptance   (tag acceptance)
        --gpu all --alloc pinned --engine ce --size 1GiB: h2d, d2h, bidir per GPU
    MempathTransferLatency %coverage=acceptance     (tag acceptance)
        --gpu all --alloc pinned --latency
    MempathTransferBandwidth %coverage=full         (tag full)
        --gpu all --mem all, every allocator, copy engines, 1 GiB
    MempathTransferSmBandwidth                      (tag full)
        --gpu all --mem all, every allocator, SM copy kernels, 1 GiB
    MempathTransferAllGpus                          (tag full)
        --all-gpus, every allocator and engine, 1 GiB
    MempathTransferSweep                            (tag full)
        --gpu all --sweep --max-size 1GiB (4 KiB .. 1 GiB), every allocator and engine
    MempathTransferLatency %coverage=full           (tag full)
        --gpu all --latency, every allocator (4 B .. 1 MiB)

Each check also has the tags `gpu` and `transfers`. Directions: `--direction h2d,d2h,bidir`
(bidir: both at once), latency `h2d,d2h`, named explicitly (GPU<->GPU directions are
another family's). The acceptance checks are
a subset of the full ones, so they are not tagged `full`: `--tag full` runs every case once.

Variables (set with `-S CHECK.NAME=VALUE`): gpus, mems, allocs, engines, directions (the
`--gpu`, `--mem`, `--alloc`, `--engine`, `--direction` lists; unset: the check's default
above, empty: the option left out, i.e. the binary's default), reps, warmup,
extra_options; size (bandwidth, all-GPUs), max_size (sweep), report_sizes (latency: the
sizes in bytes that get variables; 4 B unless set). A full check reports a bidir case's sum
only, a sweep each class's slowest peak (the saturation sizes are in memcpy.h5).
"""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, variable

import mempath_run
import mempath_summary
import references

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
LIST_VARIABLES = frozenset(name for _, name in LIST_OPTIONS)
#: The list-variable defaults of a full-coverage check of every allocator and engine.
FULL_BW = {'allocs': ALL_ALLOCS, 'engines': ALL_ENGINES, 'directions': BW_DIRECTIONS}


class MempathTransferBase(mempath_run.MempathCommand, mempath_run.WholeNode):
    """`mempath memcpy MODE ... --output memcpy.h5` (valid only with `+nvgpu`: the binary's
    memcpy needs CUDA and a GPU): variables by `kind`, references of TRANSFER_REFERENCES."""

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

    subcommand = 'memcpy'
    output_file = 'memcpy.h5'
    valid_systems = mempath_run.GPU_NODES
    #: The mode's own options (a row's) come first, then the lists, then reps and warmup.
    mode_flags: tuple[tuple[str, str], ...] = ()
    resolve_references = staticmethod(references.resolve_transfers)

    @property
    def scope(self) -> str:
        """acceptance or full: the `coverage` parameter where a check has both."""
        return getattr(self, 'coverage', 'full')

    @run_after('init')
    def set_scope(self):
        self.tags = {self.scope, 'gpu', 'transfers'}
        self.descr = self.descr.format(coverage=self.scope)

    @property
    def flags(self):
        return (*self.mode_flags, *LIST_OPTIONS, ('--reps', 'reps'), ('--warmup', 'warmup'))

    def option_value(self, name: str):
        value = getattr(self, name)
        if value is None and name in LIST_VARIABLES:
            return self.DEFAULTS[self.scope].get(name, '')
        return value

    def latency_sizes(self) -> list[int] | None:
        """Sizes (bytes) that get latency variables: `report_sizes`, else 4 B."""
        if getattr(self, 'report_sizes', None) is not None:
            return list(self.report_sizes)
        return [4]

    def perf_values(self, lines):
        # The two directions of a bidir case only where the check is small (acceptance):
        # a full check's classes stay few, every direction stays in memcpy.h5.
        return mempath_summary.transfer_perf_values(
            map(mempath_summary.transfer, lines), self.kind, self.latency_sizes(),
            parts=self.scope == 'acceptance')


def size_variable():
    """Bytes per transfer (`--size`) of the one-size checks."""
    return variable(str, value=ACCEPTANCE_SIZE)


# One limit per class, also where `coverage` makes it acceptance: a hook choosing by
# coverage would overwrite a site's `-S time_limit=...`.
@rfm.simple_test
class MempathTransferBandwidth(MempathTransferBase):
    descr = 'mempath memcpy: host<->device bandwidth at one size ({coverage})'
    tags = set()
    coverage = parameter(['acceptance', 'full'])
    kind = 'bandwidth'
    size = size_variable()
    mode_flags = (('--size', 'size'),)
    DEFAULTS = {'acceptance': {'gpus': 'all', 'allocs': 'pinned', 'engines': 'ce', 'directions': BW_DIRECTIONS},
                # Copy engines only: with the SM copies (their own check below) a quad GH200
                # would give 44 classes in one check.
                'full': {'gpus': 'all', 'mems': 'all', **FULL_BW, 'engines': 'ce'}}


@rfm.simple_test
class MempathTransferSmBandwidth(MempathTransferBase):
    descr = 'mempath memcpy --engine sm: host<->device bandwidth of SM copy kernels'
    tags = set()
    kind = 'bandwidth'
    size = size_variable()
    mode_flags = (('--size', 'size'),)
    DEFAULTS = {'full': {'gpus': 'all', 'mems': 'all', **FULL_BW, 'engines': 'sm'}}


@rfm.simple_test
class MempathTransferAllGpus(MempathTransferBase):
    descr = 'mempath memcpy --all-gpus: every GPU at once'
    tags = set()
    case_options = ['--all-gpus']
    kind = 'bandwidth'
    size = size_variable()
    mode_flags = (('--size', 'size'),)
    DEFAULTS = {'full': FULL_BW}


@rfm.simple_test
class MempathTransferSweep(MempathTransferBase):
    descr = 'mempath memcpy --sweep: bandwidth against transfer size'
    tags = set()
    case_options = ['--sweep']
    kind = 'sweep'
    mode_flags = (('--max-size', 'max_size'),)
    # Largest size of the sweep; empty: the binary's (4 GiB, or what fits). 1 GiB: a copy
    # saturates its link by 4-16 MiB (H100: 52.8-52.9 GB/s from 128 MiB to 2 GiB,
    # docs/results/2026-11-22-h100-transfers.md), so 2 and 4 GiB measure nothing new and
    # took 80 % of the sweep's time.
    max_size = variable(str, value='1GiB')
    DEFAULTS = {'full': {'gpus': 'all', **FULL_BW}}


@rfm.simple_test
class MempathTransferLatency(MempathTransferBase):
    descr = 'mempath memcpy --latency: small-transfer latency ({coverage})'
    tags = set()
    case_options = ['--latency']
    coverage = parameter(['acceptance', 'full'])
    kind = 'latency'
    # Sizes (bytes) that get variables; None: 4 B (every size stays in memcpy.h5).
    report_sizes = variable(typ.List[int], type(None), value=None)
    DEFAULTS = {'acceptance': {'gpus': 'all', 'allocs': 'pinned', 'directions': LATENCY_DIRECTIONS},
                'full': {'gpus': 'all', 'allocs': ALL_ALLOCS, 'directions': LATENCY_DIRECTIONS}}
