"""Bandwidth of every memory path: `mempath bw --all`, one check per operation and kind
of processor.

The measurement is the binary's; this check launches it, keeps the HDF5 file and turns the
`MEMPATH bw ...` summary lines (docs/schema.md) into one performance variable per path,
named `{pu}_{mem}[_to_{dst}]_{alloc}_{kernel}` (mempath_summary.py). A CPU thread sweep
reports its largest thread count; every thread count stays in bw.h5. References:
references.py.

Variables (set with `-S NAME=VALUE`): size, reps, in_cache, quick, pus, mems, allocs,
extra_options.
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

#: Which partitions can run each kind of processor: GPU cases need an NVIDIA GPU (CUDA).
VALID_SYSTEMS = {'cpu': ['*'], 'gpu': ['+nvgpu']}
#: The nightly subset; every check is also tagged `full`.
ACCEPTANCE_OPS = ('read', 'copy')


@rfm.simple_test
class MempathBandwidth(rfm.RunOnlyRegressionTest, mempath_run.WholeNode):
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
    #: No thread sweep and only the full-GPU kernel (`--threads all --kernel grid`): what a
    #: nightly acceptance run on a large node (quad GH200: ~1,800 cases) wants.
    quick = variable(bool, value=False)
    #: Any further `mempath bw` options.
    extra_options = variable(typ.List[str], value=[])

    output_file = 'bw.h5'
    valid_prog_environs = ['*']
    num_tasks = 1
    num_tasks_per_node = 1
    exclusive_access = True
    keep_files = [output_file]
    maintainers = ['mempath']
    # Every case is in the full suite (read and copy in acceptance as well): the longer limit.
    time_limit = mempath_run.FULL_TIME_LIMIT

    mempath = fixture(MempathBuild, scope='environment')

    @run_after('init')
    def set_scope(self):
        self.valid_systems = VALID_SYSTEMS[self.pu_kind]
        self.descr = f'mempath bw --all: {self.pu_kind} {self.op} bandwidth of every path'
        self.tags = {'full', self.pu_kind}
        if self.op in ACCEPTANCE_OPS:
            self.tags.add('acceptance')

    @run_before('run')
    def set_command(self):
        self.executable = self.mempath.executable_path
        opts = ['bw', '--all', '--op', self.op, '--pu-kind', self.pu_kind,
                '--output', self.output_file]
        for flag, value in (('--size', self.size), ('--reps', self.reps),
                            ('--pu', self.pus), ('--mem', self.mems),
                            ('--alloc', self.allocs)):
            if value not in ('', None):
                opts += [flag, str(value)]
        if self.in_cache:
            opts.append('--in-cache')
        if self.quick:
            opts += ['--threads', 'all', '--kernel', 'grid']
        self.executable_opts = opts + list(self.extra_options)

    @sanity_function
    def cases_ran(self):
        return mempath_run.ran_ok(self, 'bw', self.output_file)

    @run_before('performance')
    def set_perf_variables(self):
        stdout = os.path.join(self.stagedir, str(self.stdout))   # hooks run elsewhere
        lines = sn.evaluate(sn.extractall(mempath_summary.LINE_PATTERN, stdout, 0))
        cases = mempath_summary.perf_cases(mempath_summary.parse_bw_lines(lines))
        # One variable per path: the median the binary printed for that case.
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(case.median_GBps), 'GB/s')
            for name, case in sorted(cases.items())
        }
        self.reference = references.resolve(self.op, self.perf_variables)
