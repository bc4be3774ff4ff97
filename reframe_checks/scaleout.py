"""Scale-out checks, valid on partitions with the `mpi` feature; each spans two
nodes unless said otherwise:

    MempathMpiBandwidth   `mempath-mpi bw`, 1/2/4 ranks per node (parameter), uni- and
                          bidirectional; perf variables `{mode}_{alloc}_max` (GB/s at the
                          largest message) per ppn. Tags scaleout (ppn 1 also acceptance).
    MempathNccl           `mempath-mpi nccl` (+nvgpu): one rank per GPU; `{coll}_{placement}_busbw`
                          at the largest size.
    MempathInventory      `python -m slurm.inventory` with mpi4py (from the repository
                          root): every rank's host, binding and library versions into
                          inventory.h5 (acceptance).
    NcclTestsAllReduce    NVIDIA nccl-tests all_reduce_perf (+nvgpu), built from its upstream
                          git repository, or from `nccl_tests_src` (a local source folder,
                          for clusters without internet); `busbw` at the largest size,
                          referenced per system in references.py.

Variables (`-S CHECK.NAME=VALUE`): max_size, reps, extra_options; nodes (default 2).
"""
from __future__ import annotations

import os
import shlex
import shutil

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, performance_function, run_after,
                                   run_before, sanity_function, variable)
from reframe.core.exceptions import SanityError
from reframe.core.pipeline import RegressionTestPlugin

import mempath_run
import mempath_summary
import references
from mempath_build import MempathBuild, Prebuilt, REPO_ROOT
from mempath_summary import Metric


class MpiJob(RegressionTestPlugin):
    """A job over `nodes` nodes with `ppn` ranks each (one per GPU with
    `one_rank_per_gpu`); CPU binding left to the program."""

    nodes = variable(int, value=2)
    ppn = 1
    one_rank_per_gpu = False

    @run_before('run')
    def set_tasks(self):
        gpus = mempath_run.gpus_per_node(self.current_partition)
        if gpus:
            self.num_gpus_per_node = gpus
        if self.one_rank_per_gpu:
            self.ppn = gpus or 1
        self.num_tasks = self.nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        if self.job.launcher.registered_name == 'srun':
            self.job.launcher.options += ['--cpu-bind=none']


class MpiCheck(rfm.RunOnlyRegressionTest, MpiJob):
    """An MPI job that is no mempath-mpi run (inventory, nccl-tests)."""

    valid_systems = mempath_run.MPI_NODES
    valid_prog_environs = mempath_run.environs_for(valid_systems)
    exclusive_access = True
    maintainers = ['mempath']
    time_limit = mempath_run.SCALEOUT_TIME_LIMIT


#: The acceptance MPI check's largest message (a site changes it with -S max_size=...).
ACCEPTANCE_MAX_SIZE = '64MiB'


class MempathMpiCommand(mempath_run.MempathCommand, MpiJob):
    """One `mempath-mpi SUBCOMMAND ... --output FILE` with the sanity of every mempath check."""

    binary = 'mpi_executable_path'
    #: Largest message (`--max-size`); empty: the binary's.
    max_size = variable(str, value='')
    flags = (('--max-size', 'max_size'),)
    valid_systems = mempath_run.MPI_NODES
    time_limit = mempath_run.SCALEOUT_TIME_LIMIT


class MempathMpiBandwidthCommand(MempathMpiCommand):
    """The ranks per node are a parameter, and tell the binary what to expect (`--ppn`)."""

    ranks_per_node = parameter([1, 2, 4])
    subcommand, bench = 'bw', 'mpi_bw'
    flags = (('--max-size', 'max_size'), ('--ppn', 'ppn'))
    metric = Metric('{mode}_{alloc}_max', 'median_GBps', 'GB/s')

    @run_after('init')
    def set_ppn_and_tags(self):
        self.ppn = self.ranks_per_node
        self.tags = {'scaleout', 'mpi'} | ({'acceptance'} if self.ppn == 1 else set())
        # The nightly's one rank a node: a network saturates by a few MiB, and the binary's
        # sweep to 1 GiB was 470 of its 796 modelled seconds on a quad GH200 (issue 39).
        if self.ppn == 1 and not self.max_size:
            self.max_size = ACCEPTANCE_MAX_SIZE


class MempathNcclCommand(MempathMpiCommand):
    subcommand = 'nccl'
    one_rank_per_gpu = True
    valid_systems = mempath_run.MPI_GPU_NODES
    #: `--placement` list.
    placements = variable(str, value='device,host,peer')
    flags = (('--max-size', 'max_size'), ('--placement', 'placements'))
    metric = Metric('{coll}_{placement}_busbw', 'busbw_GBps', 'GB/s')


@rfm.simple_test
class MempathMpiBandwidth(MempathMpiBandwidthCommand):
    descr = 'node-to-node MPI bandwidth'
    tags = set()
    time_limit = mempath_run.SCALEOUT_TIME_LIMIT
    output_file = 'mpi_bw.h5'


@rfm.simple_test
class MempathNccl(MempathNcclCommand):
    descr = 'NCCL collectives under buffer placement'
    tags = {'scaleout', 'nccl'}
    time_limit = mempath_run.SCALEOUT_TIME_LIMIT
    output_file = 'nccl.h5'


@sn.deferrable
def inventory_complete(path: str, ranks: int, nodes: int) -> bool:
    """One `MEMPATH inventory ... status=ok` line naming every rank and node."""
    ok = [s for s in mempath_summary.read_summary(path, 'inventory') if s.status == 'ok']
    if len(ok) != 1:
        raise SanityError(f'{len(ok)} MEMPATH inventory lines with status=ok, expected 1')
    seen_ranks, hosts = int(ok[0]['ranks']), ok[0]['hosts'].split(',')
    if seen_ranks != ranks:
        raise SanityError(f'inventory saw {seen_ranks} ranks, expected {ranks}')
    if len(hosts) != nodes:
        raise SanityError(f'inventory saw {len(hosts)} hosts, expected {nodes}')
    return True


@rfm.simple_test
class MempathInventory(MpiCheck):
    """Every rank's host, CPU binding, topology and library versions (mpi4py)."""

    descr = 'node inventory with mpi4py'
    tags = {'scaleout', 'acceptance', 'mpi'}
    mempath = fixture(MempathBuild, scope='environment')
    output_file = 'inventory.h5'
    #: The job's Python: it needs mpi4py and h5py, which ReFrame's own Python need not have
    #: (the environment site_configs/setup_env.sh prepares, MEMPATH_VENV, where set).
    python = variable(str, value=(os.path.join(os.environ['MEMPATH_VENV'], 'bin', 'python')
                                  if os.environ.get('MEMPATH_VENV') else 'python3'))

    @run_before('run')
    def set_command(self):
        self.keep_files = [self.output_file]
        # A module of the repository, run from its root, where `python -m` finds the analysis
        # it writes through (docs/design.md); the file still lands in the stage folder.
        self.prerun_cmds = [f'cd {shlex.quote(REPO_ROOT)}']
        self.executable = self.python
        self.executable_opts = ['-m', 'slurm.inventory', '--output', os.path.join(self.stagedir, self.output_file),
                                '--mempath', self.mempath.executable_path]

    @sanity_function
    def every_node_answered(self):
        return inventory_complete(os.path.join(self.stagedir, str(self.stdout)),
                                  self.num_tasks, self.nodes)


class NcclTestsBuild(rfm.CompileOnlyRegressionTest, Prebuilt):
    """nccl-tests with MPI: `make MPI=1`; MPI_HOME, NCCL_HOME and CUDA_HOME from the
    environment of the same names when set."""

    #: Source: the upstream repository (ReFrame clones it), or a local folder.
    nccl_tests_src = variable(str, value=os.environ.get('MEMPATH_NCCL_TESTS_SRC',
                                                        'https://github.com/NVIDIA/nccl-tests.git'))
    #: An installed all_reduce_perf (default: on PATH) to run instead of building one.
    all_reduce_perf = variable(str, value=shutil.which('all_reduce_perf') or '')
    prebuilt_var = 'all_reduce_perf'
    build_system = 'Make'
    build_locally = False
    build_time_limit = mempath_run.BUILD_TIME_LIMIT
    valid_systems = mempath_run.MPI_GPU_NODES
    valid_prog_environs = mempath_run.environs_for(valid_systems)

    @run_before('compile')
    def configure(self):
        if self.prebuilt:
            return
        self.sourcesdir = self.nccl_tests_src
        opts = ['MPI=1']
        for var in ('MPI_HOME', 'NCCL_HOME', 'CUDA_HOME'):
            if os.environ.get(var):
                opts.append(f'{var}={os.environ[var]}')
        self.build_system.options = opts
        self.build_system.max_concurrency = 8

    @property
    def executable_path(self) -> str:
        return self.prebuilt or os.path.join(self.stagedir, 'build', 'all_reduce_perf')

    @sanity_function
    def built(self):
        return sn.assert_true(os.path.isfile(self.executable_path),
                              msg='nccl-tests all_reduce_perf was not built')


#: An nccl-tests result row: size count type redop root time algbw busbw #wrong (out of place first).
NCCL_TESTS_ROW = r'^\s+(\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+\S+'


@rfm.simple_test
class NcclTestsAllReduce(MpiCheck):
    """NVIDIA's all_reduce_perf, one rank per GPU, 8 B to `max_size`: the anchor for MempathNccl."""

    descr = 'nccl-tests all_reduce_perf'
    valid_systems = mempath_run.MPI_GPU_NODES
    valid_prog_environs = mempath_run.environs_for(valid_systems)
    tags = {'scaleout', 'nccl'}
    max_size = variable(str, value='1G')
    one_rank_per_gpu = True
    nccl_tests = fixture(NcclTestsBuild, scope='environment')

    @run_before('run')
    def set_command(self):
        self.executable = self.nccl_tests.executable_path
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
        self.reference = references.resolve_nccl(self.nodes, self.ppn, self.current_partition)
