"""What every mempath check does around the binary: one task with the whole node, and the
same sanity on the binary's summary lines and result file."""
from __future__ import annotations

import os

import reframe.utility.sanity as sn
from reframe.core.builtins import run_before
from reframe.core.pipeline import RegressionTestPlugin


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
