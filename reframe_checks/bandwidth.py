"""Bandwidth of every memory path: `mempath bw --all`, one check per operation and kind
of processor.

The measurement is the binary's; this check launches it, keeps the HDF5 file and turns the
`MEMPATH bw ...` summary lines (docs/schema.md) into one performance variable per class
of path, `{pu_kind}_{mem_kind}[_to_{dst_kind}]_{via}_{alloc}_min` (mempath_summary.py):
the weakest GPU / socket of each class, at most MAX_PERF_VARS per check. A CPU thread
sweep counts at its largest thread count; every path, kernel and thread count stays in
bw.h5. References (floors): references.py.

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
#: The nightly subset; every check is also tagged `full`.
ACCEPTANCE_OPS = ('read', 'copy')
#: No thread sweep and only the full-GPU kernel: what a nightly acceptance run on a large
#: node (quad GH200: ~1,800 cases) wants.
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

    #: Bytes per buffer (`--size`, e.g. `8MiB`); empty: the binary's default (>= 1 GiB).
    size = variable(str, value='')
    #: Timed repetitions (`--reps`); None: the binary's default.
    reps = variable(int, type(None), value=None)
    #: Allow buffers smaller than 4x the caches on the path (`--in-cache`).
    in_cache = variable(bool, value=False)
    #: Comma-separated filters of `--all` (`--pu`, `--mem`, `--alloc`); empty: all.
    pus = variable(str, value='')
    mems = variable(str, value='')
    allocs = variable(str, value='')
    #: `--threads all --kernel grid` (QUICK_OPTIONS).
    quick = variable(bool, value=False)

    subcommand = 'bw'
    case_options = ['--all']
    flags = (('--op', 'op'), ('--pu-kind', 'pu_kind'), ('--size', 'size'), ('--reps', 'reps'),
             ('--pu', 'pus'), ('--mem', 'mems'), ('--alloc', 'allocs'),
             ('--in-cache', 'in_cache'), (QUICK_OPTIONS, 'quick'))
    output_file = 'bw.h5'
    metric = BandwidthMetric()
    # Every case is in the full suite (read and copy in acceptance as well): the longer limit.
    time_limit = mempath_run.FULL_TIME_LIMIT

    @run_after('init')
    def set_scope(self):
        self.valid_systems = VALID_SYSTEMS[self.pu_kind]
        self.descr = f'mempath bw --all: {self.pu_kind} {self.op} bandwidth of every path'
        self.tags = {'full', self.pu_kind}
        if self.op in ACCEPTANCE_OPS:
            self.tags.add('acceptance')

    def resolve_references(self, perf_variables, partition=None):
        return references.resolve(self.op, perf_variables, partition)
