"""What every mempath check does around the binary: the base class of a check that runs
one `mempath` (or `mempath-mpi`) command, the sanity on its summary lines and result file,
one task with the whole node, one check per allocator.

A family file (bandwidth.py, latency.py, ...) holds a base class with the family's
variables and its checks, each a class of its own under `@rfm.simple_test` (`class
MempathStream(MempathStreamCommand)`), so that grep finds a check by the name a report gives.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Union

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError
from reframe.core.pipeline import RegressionTestPlugin

import mempath_summary
# The allocators of kinds.def: a sweep's `%alloc=` values (ALLOCATORS), and those whose
# checks run on `+nvgpu` partitions only (CUDA_ALLOCATORS).
from mempath_kinds import ALLOCATORS, CUDA_ALLOCATORS  # noqa: F401 (the families' sweeps)
from mempath_build import BUILD_TIME_LIMIT, MempathBuild  # noqa: F401 (one place for limits)

# Wall-clock limits of the checks' jobs, per family (ReFrame's `time_limit`, and
# `build_time_limit` for the build fixtures). Generous on purpose: only a hung run reaches
# them, and it then fails there instead of holding the node until the allocation or the
# nightly job ends. A check's limit is a ReFrame variable: a site changes every
# check's with `-S time_limit=1h`, or one check's with `-S MempathChaseSweep.time_limit=4h`.
#: Acceptance checks (the nightly subset: one default-sized pass over the paths).
ACCEPTANCE_TIME_LIMIT = '20m'
#: Full sweeps (sizes, thread counts, every allocator) and checks that run both scopes.
FULL_TIME_LIMIT = '2h'
#: Multi-node MPI / NCCL jobs. (Builds: mempath_build.BUILD_TIME_LIMIT, also here.)
SCALEOUT_TIME_LIMIT = '20m'

#: Memories by their role seen from each processor (docs/cli.md, "Memory roles"): its own
#: host memory and HBM, the next superchip's. The acceptance checks measure these (a
#: nightly sees a path class get slower through one well-placed path of it), and so do the
#: full suite's sweeps of sizes, threads or operands: every path is measured once by the
#: full bandwidth checks, and sweeping each symmetric peer again would repeat a link class.
MEMORY_ROLES = 'local-host,local-hbm,peer-host,peer-hbm'

#: Partitions a check may run on, by feature (as centres write them, e.g. CSCS's): `remote`
#: marks the partitions whose jobs land on compute nodes, never `*` (that includes login
#: nodes); `nvgpu` an NVIDIA GPU, `mpi` a launcher that starts MPI ranks across nodes.
CPU_NODES = ['+remote']
GPU_NODES = ['+remote +nvgpu']
MPI_NODES = ['+remote +mpi']
MPI_GPU_NODES = ['+remote +mpi +nvgpu']


def environs_for(valid_systems: Iterable[str]) -> list[str]:
    """The environments a check on these partitions needs, by feature: a C++ compiler
    (`compiler`: the build fixture's fallback), `cuda` on GPU partitions, `mpi` for ranks."""
    features = ['+compiler']
    spec = ' '.join(valid_systems)
    if '+nvgpu' in spec:
        features.append('+cuda')
    if '+mpi' in spec:
        features.append('+mpi')
    return [' '.join(features)]


def gpus_per_node(partition) -> int:
    """GPUs of a node of `partition` (its `devices`); 0 where it declares none."""
    return sum(d.num_devices or 0 for d in partition.select_devices('gpu'))


#: Statuses a summary line may have in a passing run of a check that asks for it
#: (skipped: the node cannot run that case).
PASSING_STATUSES = ('ok', 'skipped')


class WholeNode(RegressionTestPlugin):
    """mempath pins its own threads and binds its issuing threads to NUMA nodes: its one
    task needs every core of the node (a Slurm step otherwise gets only the CPUs it asked
    for) and no CPU binding from the launcher."""

    @run_before('run')
    def give_all_cores(self):
        num_cpus = self.current_partition.processor.num_cpus
        if num_cpus:
            self.num_cpus_per_task = num_cpus
        if self.job.launcher.registered_name == 'srun':
            self.job.launcher.options += ['--cpu-bind=none']
        # The whole node, its GPUs included (Slurm hands a job none unless it asks).
        gpus = gpus_per_node(self.current_partition)
        if gpus:
            self.num_gpus_per_node = gpus


class PerAllocator(RegressionTestPlugin):
    """A check split by allocator (its `alloc` parameter, `%alloc=`), so that a sweep over
    every allocator of a large node still reports a few variables per check: the command
    gets `--alloc ALLOC`, and an allocator that needs CUDA only GPU partitions."""

    @run_after('init')
    def select_allocator(self):
        self.case_options = [*self.case_options, '--alloc', self.alloc]
        if self.alloc in CUDA_ALLOCATORS:
            self.valid_systems = GPU_NODES


@sn.deferrable
def summary_sane(path: str, bench: str, only_passing: bool = False) -> bool:
    """At least one `MEMPATH <bench> ... status=ok` line, none failed, every tagged line
    readable; with `only_passing`, every status ok or skipped."""
    try:
        statuses = [s.status for s in mempath_summary.read_summary(path, bench)]
    except mempath_summary.MalformedLine as err:
        raise SanityError(f'unreadable summary line: {err}') from None
    if 'ok' not in statuses:
        raise SanityError(f'no case finished (status=ok) among {len(statuses)} '
                          f'MEMPATH {bench} line(s)')
    if 'failed' in statuses:
        raise SanityError(f'a case failed (status=failed): {statuses.count("failed")} '
                          f'MEMPATH {bench} line(s)')
    odd = sorted(set(statuses) - set(PASSING_STATUSES)) if only_passing else []
    if odd:
        raise SanityError(f'MEMPATH {bench} lines with status {", ".join(odd)} '
                          f'(only {" and ".join(PASSING_STATUSES)} pass)')
    return True


@sn.deferrable
def cases_verified(stdout: str, bench: str) -> bool:
    """Every `ok` summary line of `bench` says `verified=1` (the binary checked what the
    case wrote or read). Read from the job's output alone: a centre's ReFrame has no HDF5
    reader beside it, and the line is printed from the row the HDF5 file holds."""
    lines = [s for s in mempath_summary.read_summary(stdout, bench) if s.status == 'ok']
    unmarked = [i for i, s in enumerate(lines) if 'verified' not in s.fields]
    if unmarked:
        raise SanityError(f'{len(unmarked)} ok MEMPATH {bench} line(s) carry no verified= '
                          f'(a binary older than the verified field of the summary line)')
    unverified = [i for i, s in enumerate(lines) if s.fields['verified'] != '1']
    if unverified:
        raise SanityError(f'MEMPATH {bench}: ok case(s) {unverified[:10]} are not verified')
    return True


def ran_ok(test, bench: str, output_file: str, only_passing: bool = False,
           verified: bool = False):
    """Exit code 0, the summary lines sane (`summary_sane`), the HDF5 file written and,
    with `verified`, every ok case verified (`cases_verified`, from stdout)."""
    stdout = os.path.join(test.stagedir, str(test.stdout))
    output = os.path.join(test.stagedir, output_file)
    checks = [
        sn.assert_eq(test.job.exitcode, 0,
                     msg='mempath exited with {0} (1: a case failed, 2: bad input)'),
        summary_sane(stdout, bench, only_passing),
        sn.assert_true(os.path.isfile(output), msg=f'{output_file} was not written'),
    ]
    if verified:
        checks.append(cases_verified(stdout, bench))
    return sn.all(checks)


#: An option of a command: one word (`--size`), or several that a switch stands for.
Flag = Union[str, tuple[str, ...]]


def command_options(test, flags: Iterable[tuple[Flag, str]]) -> list[str]:
    """`flag value` per (flag, variable) whose value is set: '' and None leave the flag
    out, True gives the flag (its words) alone, False nothing."""
    opts: list[str] = []
    for flag, name in flags:
        value = test.option_value(name)
        if value is True:
            opts += [flag] if isinstance(flag, str) else list(flag)
        elif value not in ('', None, False):
            opts += [flag, str(value)]
    return opts


class MempathCommand(rfm.RunOnlyRegressionTest):
    """One `mempath SUBCOMMAND OPTIONS FLAGS --output FILE EXTRA` job.

    A family sets `subcommand`, `bench` (the summary lines' benchmark, where it is not the
    subcommand), `flags` (option -> variable) and `metric`; each check, a class of its own
    (`@rfm.simple_test class MempathStream(...)`: found by its name), sets `case_options`,
    `output_file` and its descr, tags, time limit and systems."""

    #: The subcommand, and the benchmark its summary lines name ('' = the subcommand).
    subcommand = ''
    bench = ''
    #: Options that select the cases, right after the subcommand (the check's).
    case_options: list[str] = []
    #: (option, variable) pairs after the case options, in this order.
    flags: tuple[tuple[Flag, str], ...] = ()
    output_file = ''
    #: How summary lines become performance variables (mempath_summary.Metric or any
    #: object with `values(lines)`); None: no variables.
    metric: Any = None
    #: Reference lookup, (variables, current partition) -> reference (references.py);
    #: None: no references.
    resolve_references: Callable | None = None
    #: Sanity also asks every summary line to be ok or skipped, and every ok case of the
    #: HDF5 file to be verified (the benchmarks that check their own results).
    verified = False
    #: Name of the fixture attribute's path to run (`executable_path`, `mpi_executable_path`).
    binary = 'executable_path'

    #: Any further options of the subcommand, after everything else.
    extra_options = variable(typ.List[str], value=[])

    valid_systems = CPU_NODES
    num_tasks = 1
    num_tasks_per_node = 1
    exclusive_access = True
    maintainers = ['mempath']
    time_limit = FULL_TIME_LIMIT
    mempath = fixture(MempathBuild, scope='environment')

    @property
    def summary_bench(self) -> str:
        return self.bench or self.subcommand

    def option_value(self, name: str):
        """The value a flag gets from its variable (families with defaults override)."""
        return getattr(self, name)

    def command(self) -> list[str]:
        return [self.subcommand, *self.case_options, *command_options(self, self.flags),
                '--output', self.output_file, *self.extra_options]

    @run_after('init')
    def keep_output(self):
        self.keep_files = [self.output_file]

    @run_after('init', always_last=True)   # after a family's hooks set valid_systems
    def match_environments(self):
        self.valid_prog_environs = environs_for(self.valid_systems)

    @run_before('run')
    def set_command(self):
        self.executable = getattr(self.mempath, self.binary)
        self.executable_opts = self.command()

    @sanity_function
    def cases_ran(self):
        return ran_ok(self, self.summary_bench, self.output_file, self.verified,
                      self.verified)

    def perf_values(self, lines: list[mempath_summary.SummaryLine]
                    ) -> dict[str, tuple[float, str]]:
        return self.metric.values(lines) if self.metric else {}

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():     # nothing ran, nothing to read (`reframe --dry-run`)
            return
        stdout = os.path.join(self.stagedir, str(self.stdout))   # hooks run elsewhere
        values = self.perf_values(mempath_summary.read_summary(stdout, self.summary_bench))
        self.perf_variables = {name: sn.make_performance_function(sn.defer(v), unit)
                               for name, (v, unit) in sorted(values.items())}
        if self.resolve_references:
            self.reference = self.resolve_references(self.perf_variables,
                                                     self.current_partition)
