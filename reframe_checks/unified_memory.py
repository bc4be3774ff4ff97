"""Unified-memory behaviour (`mempath um`) and the allocator matrix (`mempath
allocmatrix`), valid only on NVIDIA GPU partitions (`+nvgpu`), tag `full`.

The binary measures; these checks launch it, keep the HDF5 file and turn its summary
lines into performance variables:
    MempathUnifiedMemory     `{exp}_{alloc}_{metric}`, e.g. `inplace_managed_first_GBps`,
                             `evict_managed_cold_GBps`, `interleave_managed_gpu_iter_us_n1`
    MempathAllocatorMatrix   `{src_alloc}_to_{dst_alloc}` (median GB/s of cudaMemcpy)
No references yet: these record behaviour (migrations, evictions) to compare runs with.
Variables (`-S CHECK.NAME=VALUE`): size, reps, extra_options.
"""
from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_before, sanity_function, variable

import mempath_run
import mempath_summary
from mempath_build import MempathBuild


class MempathGpuCommand(rfm.RunOnlyRegressionTest, mempath_run.WholeNode):
    """One `mempath SUBCOMMAND ... --output FILE`, sanity on its summary lines."""

    subcommand = ''
    output_file = ''
    #: Bytes per buffer (`--size`); empty: the binary's default.
    size = variable(str, value='')
    #: Repetitions (`--reps`); None: the binary's default.
    reps = variable(int, type(None), value=None)
    extra_options = variable(typ.List[str], value=[])

    valid_systems = ['+nvgpu']
    valid_prog_environs = ['*']
    num_tasks = 1
    exclusive_access = True
    tags = {'full', 'gpu'}
    time_limit = mempath_run.FULL_TIME_LIMIT
    maintainers = ['mempath']
    mempath = fixture(MempathBuild, scope='environment')

    @run_before('run')
    def set_command(self):
        self.keep_files = [self.output_file]
        self.executable = self.mempath.executable_path
        opts = [self.subcommand, '--output', self.output_file]
        if self.size:
            opts += ['--size', self.size]
        if self.reps is not None:
            opts += ['--reps', str(self.reps)]
        self.executable_opts = opts + list(self.extra_options)

    @sanity_function
    def cases_ran(self):
        return mempath_run.ran_ok(self, self.subcommand, self.output_file)

    def perf_values(self, fields: list[dict[str, str]]) -> dict[str, tuple[float, str]]:
        raise NotImplementedError

    @run_before('performance')
    def set_perf_variables(self):
        stdout = os.path.join(self.stagedir, str(self.stdout))
        lines = sn.evaluate(sn.extractall(rf'^MEMPATH {self.subcommand} (.*)$', stdout, 1))
        values = self.perf_values([mempath_summary.parse_fields(line) for line in lines])
        self.perf_variables = {name: sn.make_performance_function(sn.defer(v), unit)
                               for name, (v, unit) in sorted(values.items())}


@rfm.simple_test
class MempathUnifiedMemory(MempathGpuCommand):
    """`mempath um`: interleaved CPU/GPU writes, in-place updates, cold/warm/evicted reads."""

    subcommand = 'um'
    output_file = 'um.h5'
    descr = 'unified-memory behaviour: migrations, in-place updates, evictions'

    def perf_values(self, fields):
        values = {}
        for f in fields:
            if f.get('status') != 'ok':
                continue
            for key, value in f.items():
                unit = 'GB/s' if key.endswith('_GBps') else 'us' if '_us_' in key else None
                if unit:
                    values[f"{f['exp']}_{f['alloc']}_{key}"] = (float(value), unit)
        return values


@rfm.simple_test
class MempathAllocatorMatrix(MempathGpuCommand):
    """`mempath allocmatrix`: cudaMemcpy between every source and destination allocator."""

    subcommand = 'allocmatrix'
    output_file = 'allocmatrix.h5'
    descr = 'cudaMemcpy between every pair of allocators'

    def perf_values(self, fields):
        return {f"{f['src_alloc']}_to_{f['dst_alloc']}": (float(f['median_GBps']), 'GB/s')
                for f in fields if f.get('status') == 'ok'}
