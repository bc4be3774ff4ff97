"""What every mempath check does around the binary: one task with the whole node, and the
same sanity on the binary's summary lines and result file."""
from __future__ import annotations

import os

import reframe.utility.sanity as sn
from reframe.core.builtins import run_before
from reframe.core.pipeline import RegressionTestPlugin

# Wall-clock limits of the checks' jobs, per family (ReFrame's `time_limit`, and
# `build_time_limit` for the build fixtures). Generous on purpose: only a hung run reaches
# them, and it then fails there instead of holding the node until the allocation or the
# nightly job ends (issue 12). A check's limit is a ReFrame variable: a site changes every
# check's with `-S time_limit=1h`, or one check's with `-S MempathChaseSweep.time_limit=4h`.
#: Acceptance checks (the nightly subset: one default-sized pass over the paths).
ACCEPTANCE_TIME_LIMIT = '20m'
#: Full sweeps (sizes, thread counts, every allocator) and checks that run both scopes.
FULL_TIME_LIMIT = '2h'
#: Multi-node MPI / NCCL jobs.
SCALEOUT_TIME_LIMIT = '20m'
#: Building mempath or nccl-tests in a job.
BUILD_TIME_LIMIT = '1h'


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


def ran_ok(test, bench: str, output_file: str):
    """Exit code 0, at least one `MEMPATH <bench> ... status=ok` line, none failed, and the
    HDF5 file written."""
    return sn.all([
        sn.assert_eq(test.job.exitcode, 0,
                     msg='mempath exited with {0} (1: a case failed, 2: bad input)'),
        sn.assert_found(rf'^MEMPATH {bench} .*status=ok', test.stdout,
                        msg='no case finished (status=ok)'),
        sn.assert_not_found(rf'^MEMPATH {bench} .*status=failed', test.stdout,
                            msg='a case failed (status=failed)'),
        sn.assert_true(os.path.isfile(os.path.join(test.stagedir, output_file)),
                       msg=f'{output_file} was not written'),
    ])
