"""Scale-out checks (issue 5), valid on partitions with the `mpi` feature; each spans two
nodes unless said otherwise:

    MempathMpiBandwidth   `mempath-mpi bw`, 1/2/4 ranks per node (parameter), uni- and
                          bidirectional; perf variables `{mode}_{alloc}_max` (GB/s at the
                          largest message) per ppn. Tags scaleout (ppn 1 also acceptance).
    MempathNccl           `mempath-mpi nccl` (+nvgpu): one rank per GPU; `{coll}_{placement}_busbw`
                          at the largest size.
    MempathInventory      slurm/inventory.py with mpi4py: every rank's host, binding and
                          library versions into inventory.h5 (acceptance).
    NcclTestsAllReduce    NVIDIA nccl-tests all_reduce_perf (+nvgpu), built from its upstream
                          git repository, or from `nccl_tests_src` (a local source folder,
                          for clusters without internet); `busbw` at the largest size,
                          referenced per system in references.py.

Variables (`-S CHECK.NAME=VALUE`): max_size, reps, extra_options; nodes (default 2).
"""
from __future__ import annotations

import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, parameter, performance_function, run_after, run_before,
                                   sanity_function, variable)

import mempath_run
import mempath_summary
import references
from mempath_build import MempathBuild, REPO_ROOT


class MpiCheck(rfm.RunOnlyRegressionTest):
    """A job over `nodes` nodes with `ppn` ranks each; CPU binding left to mempath-mpi."""

    nodes = variable(int, value=2)
    ppn = 1
    valid_systems = ['+mpi']
    valid_prog_environs = ['*']
    exclusive_access = True
    maintainers = ['mempath']
    time_limit = mempath_run.SCALEOUT_TIME_LIMIT

    @run_before('run')
    def set_tasks(self):
        self.num_tasks = self.nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        if self.job.launcher.registered_name == 'srun':
            self.job.launcher.options += ['--cpu-bind=none']


class MempathMpiCommand(MpiCheck):
    """One `mempath-mpi SUBCOMMAND ... --output FILE` with the sanity of every mempath check."""

    subcommand = ''
    bench = ''
    output_file = ''
    max_size = variable(str, value='')
    extra_options = variable(typ.List[str], value=[])
    mempath = fixture(MempathBuild, scope='environment')

    @run_before('run')
    def set_command(self):
        self.keep_files = [self.output_file]
        self.executable = self.mempath.mpi_executable_path
        opts = [self.subcommand, '--output', self.output_file]
        if self.max_size:
            opts += ['--max-size', self.max_size]
        self.executable_opts = opts + list(self.extra_options)

    @sanity_function
    def cases_ran(self):
        return sn.all([
            sn.assert_found(rf'^MEMPATH {self.bench} .*status=ok', self.stdout, msg='no case finished (status=ok)'),
            sn.assert_not_found(rf'^MEMPATH {self.bench} .*status=failed', self.stdout, msg='a case failed'),
            sn.assert_true(os.path.isfile(os.path.join(self.stagedir, self.output_file)),
                           msg=f'{self.output_file} was not written'),
        ])

    def summary_fields(self) -> list[dict[str, str]]:
        stdout = os.path.join(self.stagedir, str(self.stdout))
        lines = sn.evaluate(sn.extractall(rf'^MEMPATH {self.bench} (.*)$', stdout, 1))
        return [mempath_summary.parse_fields(line) for line in lines]


def largest_ok(fields: list[dict[str, str]], key: tuple[str, ...], value: str) -> dict[str, float]:
    """{'_'.join(key fields): value at the largest `size` with status ok}."""
    best: dict[str, tuple[int, float]] = {}
    for f in fields:
        if f.get('status') != 'ok':
            continue
        name = '_'.join(f[k] for k in key)
        size = int(f['size'])
        if name not in best or size > best[name][0]:
            best[name] = (size, float(f[value]))
    return {name: v for name, (_, v) in best.items()}


@rfm.simple_test
class MempathMpiBandwidth(MempathMpiCommand):
    """Windowed Isend/Irecv between the nodes, uni- and bidirectional."""

    ranks_per_node = parameter([1, 2, 4])
    subcommand = 'bw'
    bench = 'mpi_bw'
    output_file = 'mpi_bw.h5'
    descr = 'node-to-node MPI bandwidth'

    @run_after('init')
    def set_ppn_and_tags(self):
        self.ppn = self.ranks_per_node
        self.tags = {'scaleout', 'mpi'} | ({'acceptance'} if self.ppn == 1 else set())

    @run_before('run')
    def expect_ppn(self):
        self.executable_opts += ['--ppn', str(self.ppn)]

    @run_before('performance')
    def set_perf_variables(self):
        values = largest_ok(self.summary_fields(), ('mode', 'alloc'), 'median_GBps')
        self.perf_variables = {f'{name}_max': sn.make_performance_function(sn.defer(v), 'GB/s')
                               for name, v in sorted(values.items())}


@rfm.simple_test
class MempathNccl(MempathMpiCommand):
    """NCCL all-reduce and all-gather, one rank per GPU, buffers in device/host/peer memory."""

    subcommand = 'nccl'
    bench = 'nccl'
    output_file = 'nccl.h5'
    descr = 'NCCL collectives under buffer placement'
    valid_systems = ['+mpi +nvgpu']
    tags = {'scaleout', 'nccl'}
    placements = variable(str, value='device,host,peer')

    @run_before('run')
    def one_rank_per_gpu(self):
        gpus = self.current_partition.select_devices('gpu')
        self.ppn = gpus[0].num_devices if gpus else 1
        self.num_tasks = self.nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        self.executable_opts += ['--placement', self.placements]

    @run_before('performance')
    def set_perf_variables(self):
        values = largest_ok(self.summary_fields(), ('coll', 'placement'), 'busbw_GBps')
        self.perf_variables = {f'{name}_busbw': sn.make_performance_function(sn.defer(v), 'GB/s')
                               for name, v in sorted(values.items())}


@rfm.simple_test
class MempathInventory(MpiCheck):
    """Every rank's host, CPU binding, topology and library versions (mpi4py)."""

    descr = 'node inventory with mpi4py'
    tags = {'scaleout', 'acceptance', 'mpi'}
    mempath = fixture(MempathBuild, scope='environment')
    output_file = 'inventory.h5'

    @run_before('run')
    def set_command(self):
        self.keep_files = [self.output_file]
        self.executable = 'python3'
        self.executable_opts = [os.path.join(REPO_ROOT, 'slurm', 'inventory.py'), '--output', self.output_file,
                                '--mempath', self.mempath.executable_path]

    @sanity_function
    def every_node_answered(self):
        hosts = sn.extractsingle(r'^MEMPATH inventory ranks=(\d+) hosts=(\S+) .*status=ok', self.stdout, 2)
        ranks = sn.extractsingle(r'^MEMPATH inventory ranks=(\d+) ', self.stdout, 1, int)
        return sn.all([sn.assert_eq(ranks, self.num_tasks),
                       sn.assert_eq(sn.len(sn.defer(sn.evaluate(hosts).split(','))), self.nodes,
                                    msg='inventory saw {0} hosts, expected {1}')])


class NcclTestsBuild(rfm.CompileOnlyRegressionTest):
    """nccl-tests with MPI: `make MPI=1`; MPI_HOME, NCCL_HOME and CUDA_HOME from the
    environment of the same names when set."""

    #: Source: the upstream repository (ReFrame clones it), or a local folder.
    nccl_tests_src = variable(str, value=os.environ.get('MEMPATH_NCCL_TESTS_SRC',
                                                        'https://github.com/NVIDIA/nccl-tests.git'))
    build_system = 'Make'
    build_locally = False
    build_time_limit = mempath_run.BUILD_TIME_LIMIT
    valid_systems = ['+mpi +nvgpu']
    valid_prog_environs = ['*']

    @run_before('compile')
    def configure(self):
        self.sourcesdir = self.nccl_tests_src
        opts = ['MPI=1']
        for var in ('MPI_HOME', 'NCCL_HOME', 'CUDA_HOME'):
            if os.environ.get(var):
                opts.append(f'{var}={os.environ[var]}')
        self.build_system.options = opts
        self.build_system.max_concurrency = 8

    @sanity_function
    def built(self):
        return sn.assert_true(os.path.isfile(os.path.join(self.stagedir, 'build', 'all_reduce_perf')),
                              msg='nccl-tests all_reduce_perf was not built')


#: An nccl-tests result row: size count type redop root time algbw busbw #wrong (out of place first).
NCCL_TESTS_ROW = r'^\s+(\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+\S+'


@rfm.simple_test
class NcclTestsAllReduce(MpiCheck):
    """NVIDIA's all_reduce_perf, one rank per GPU, 8 B to `max_size`: the anchor for MempathNccl."""

    descr = 'nccl-tests all_reduce_perf'
    valid_systems = ['+mpi +nvgpu']
    tags = {'scaleout', 'nccl'}
    max_size = variable(str, value='1G')
    nccl_tests = fixture(NcclTestsBuild, scope='environment')

    @run_before('run')
    def set_command(self):
        gpus = self.current_partition.select_devices('gpu')
        self.ppn = gpus[0].num_devices if gpus else 1
        self.num_tasks = self.nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        self.executable = os.path.join(self.nccl_tests.stagedir, 'build', 'all_reduce_perf')
        self.executable_opts = ['-b', '8', '-e', self.max_size, '-f', '2', '-g', '1']

    @sanity_function
    def results_correct(self):
        return sn.all([sn.assert_found(r'# Out of bounds values : 0 OK', self.stdout),
                       sn.assert_found(NCCL_TESTS_ROW, self.stdout, msg='no result rows')])

    @performance_function('GB/s')
    def busbw(self):
        return sn.extractall(NCCL_TESTS_ROW, self.stdout, 2, float)[-1]

    @run_before('performance')
    def set_reference(self):
        self.reference = references.resolve_nccl(self.nodes, self.ppn)
