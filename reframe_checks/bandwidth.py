"""Bandwidth of every memory path: `mempath bw --all`, one check per operation, kind of
processor and coverage.

The measurement is the binary's; this check launches it, keeps the HDF5 file and turns the
`MEMPATH bw ...` summary lines (docs/schema.md) into one performance variable per class
of path, `{pu_kind}_{mem_kind}[_to_{dst_kind}]_{via}_{alloc}_min` (mempath_summary.py):
the weakest GPU / socket of each class, at most MAX_PERF_VARS per check. A CPU thread
sweep counts at its largest thread count; every path, kernel and thread count stays in
bw.h5. References (floors): references.py.

Coverage `full` (tag full): every path, allocator and, for CPUs, the thread sweep.
Coverage `acceptance` (tag acceptance, reads and copies): what a nightly needs to see a
path class get slower, one well-placed case each: each processor with all its cores (or
the full-GPU kernel) on each memory role it reaches (its own host memory and HBM, the next
superchip's; docs/cli.md, "Memory roles"), every allocator of those paths. On a quad GH200
that is 344 cases instead of 1,800 (docs/reframe.md).

Variables (set with `-S NAME=VALUE`): size, reps, in_cache, quick, pus, mems, allocs,
extra_options.
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import parameter, run_after, variable

import mempath_run
import mempath_summary
import references

#: Which partitions can run each kind of processor: GPU cases need an NVIDIA GPU (CUDA).
VALID_SYSTEMS = {'cpu': mempath_run.CPU_NODES, 'gpu': mempath_run.GPU_NODES}
#: The operations of the nightly subset.
ACCEPTANCE_OPS = ('read', 'copy')
#: No thread sweep and only the full-GPU kernel.
QUICK_OPTIONS = ('--threads', 'all', '--kernel', 'grid')


class BandwidthMetric:
    """One variable per class of path (mempath_summary.class_minima): the smallest median
    of its paths, so a floor on it holds for every GPU and socket. Every path stays in
    bw.h5."""

    @staticmethod
    def values(lines: list[mempath_summary.SummaryLine]) -> dict[str, tuple[float, str]]:
        cases = mempath_summary.class_minima(map(mempath_summary.bw_case, lines))
        return {name: (case.median_GBps, 'GB/s') for name, case in sorted(cases.items())}


@rfm.simple_test
class MempathBandwidth(mempath_run.MempathCommand, mempath_run.WholeNode):
    """`mempath bw --all --op OP --pu-kind KIND --output bw.h5`."""

    op = parameter(['read', 'write', 'copy'])
    pu_kind = parameter(['cpu', 'gpu'])
    coverage = parameter(['acceptance', 'full'])

    #: Bytes per buffer (`--size`, e.g. `8MiB`); empty: the binary's default (>= 1 GiB).
    size = variable(str, value='')
    #: Timed repetitions (`--reps`); None: the binary's default.
    reps = variable(int, type(None), value=None)
    #: Allow buffers smaller than 4x the caches on the path (`--in-cache`).
    in_cache = variable(bool, value=False)
    #: Comma-separated filters of `--all` (`--pu`, `--mem`, `--alloc`); empty: all
    #: (`mems` None: the coverage's, mempath_run.MEMORY_ROLES or all).
    pus = variable(str, value='')
    mems = variable(str, type(None), value=None)
    allocs = variable(str, value='')
    #: `--threads all --kernel grid` (QUICK_OPTIONS); None: the coverage's (acceptance: on).
    quick = variable(bool, type(None), value=None)

    subcommand = 'bw'
    case_options = ['--all']
    flags = (('--op', 'op'), ('--pu-kind', 'pu_kind'), ('--size', 'size'), ('--reps', 'reps'),
             ('--pu', 'pus'), ('--mem', 'mems'), ('--alloc', 'allocs'),
             ('--in-cache', 'in_cache'), (QUICK_OPTIONS, 'quick'))
    output_file = 'bw.h5'
    metric = BandwidthMetric()
    # One limit for both coverages: a hook choosing by coverage would overwrite a site's
    # `-S time_limit=...`.
    time_limit = mempath_run.FULL_TIME_LIMIT

    @run_after('init')
    def set_scope(self):
        nightly = self.coverage == 'acceptance'
        # Writes have no nightly check: reads and copies see the same links.
        self.valid_systems = [] if nightly and self.op not in ACCEPTANCE_OPS else VALID_SYSTEMS[self.pu_kind]
        what = 'each memory role' if nightly else 'every path'
        self.descr = f'mempath bw --all: {self.pu_kind} {self.op} bandwidth of {what} ({self.coverage})'
        self.tags = {self.coverage, self.pu_kind}

    def option_value(self, name: str):
        value = getattr(self, name)
        nightly = self.coverage == 'acceptance'
        if name == 'mems' and value is None:
            return mempath_run.MEMORY_ROLES if nightly else ''
        if name == 'quick' and value is None:
            return nightly
        return value

    def resolve_references(self, perf_variables, partition=None):
        return references.resolve(self.op, perf_variables, partition)
