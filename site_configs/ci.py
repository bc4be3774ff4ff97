"""ReFrame site configuration for the CI's two-node Slurm cluster (slurm/ci/cluster.sh,
docs/reframe.md "The CI Slurm cluster"): nodes `n1` and `n2` in their own network
namespaces on one CI machine, Slurm partition `ci` without accounting, Open MPI through
PMIx. Run ReFrame beside node n1, where the hostname is `n1` and this system selects
itself:

    slurm/ci/cluster.sh start
    slurm/ci/cluster.sh exec .venv/bin/reframe -C site_configs/ci.py -c reframe_checks -r \
        --exec-policy=serial --tag acceptance
    slurm/ci/cluster.sh stop

Both nodes share the machine's cores (`num_cpus` below is this machine's): timings from
this system are functional only. No GPU: the partition has no `gpu`/`nvgpu` feature.
Features as a centre declares them: the partition `remote` (Slurm compute nodes) and `mpi`,
the environment `compiler` and `mpi`; the checks select by feature only.

Environment variables (read when the configuration loads):
  MEMPATH_CI_PARTITION  Slurm partition to submit to (default: `ci`, cluster.sh's)
"""
from __future__ import annotations

import os
import re

import reframe.utility.osext as osext
from reframe.core.backends import register_scheduler
from reframe.core.exceptions import ConfigError
from reframe.core.schedulers.slurm import SqueueJobScheduler, slurm_state_completed


class SqueueWithExitCode(SqueueJobScheduler):
    """ReFrame's `squeue` scheduler (no accounting needed: the `slurm` one polls sacct),
    which also reads a finished job's exit code from `scontrol show job` while slurmctld
    still knows the job (MinJobAge, 300 s by default). The `squeue` backend alone leaves
    the exit code unset, and the mempath checks' sanity wants 0."""

    def poll(self, *jobs):
        super().poll(*jobs)
        for job in jobs:
            if job is None or job.exitcode is not None or not job.state:
                continue
            if not slurm_state_completed(job.state):
                continue
            out = osext.run_command(f'scontrol show job -o {job.jobid}')
            m = re.search(r'\bExitCode=(\d+):(\d+)', out.stdout)
            if m:
                code, signal = int(m[1]), int(m[2])
                job._exitcode = code if signal == 0 else 128 + signal


try:
    register_scheduler('squeue_exitcode')(SqueueWithExitCode)
except ConfigError:
    pass  # this file was loaded before in this process

_PARTITION = os.environ.get('MEMPATH_CI_PARTITION', 'ci')
# Every node of the CI cluster is this machine (cluster.sh declares its real cores).
_NUM_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()

site_configuration = {
    'systems': [
        {
            'name': 'ci',
            'descr': 'CI: two Slurm nodes in network namespaces of one machine',
            'hostnames': [r'^n[12]$'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'cpu',
                    'descr': 'n1 and n2 (they share the same cores: timings are functional only)',
                    # ReFrame's `slurm` scheduler polls sacct, which needs accounting.
                    'scheduler': 'squeue_exitcode',
                    'launcher': 'srun',
                    'access': [f'--partition={_PARTITION}'] if _PARTITION else [],
                    'time_limit': '10m',
                    'environs': ['builtin'],
                    'max_jobs': 1,
                    'features': ['remote', 'mpi'],
                    # WholeNode (mempath_run.py) gives the one task every core.
                    'processor': {'num_cpus': _NUM_CPUS} if _NUM_CPUS else {},
                    'env_vars': [
                        # = `srun --mpi=pmix` for every launch (Debian's Open MPI has no PMI-2;
                        # ReFrame has no per-partition launcher options, srun reads this).
                        ['SLURM_MPI_TYPE', 'pmix'],
                        # CI runs as root, and both nodes share the same cores: bind nothing.
                        ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
                        ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
                        ['OMPI_MCA_hwloc_base_binding_policy', 'none'],
                    ],
                },
            ],
        },
    ],
    'environments': [
        {
            'name': 'builtin',
            'target_systems': ['ci'],
            'features': ['compiler', 'mpi'],
            'cc': 'cc',
            'cxx': 'c++',
            'ftn': '',
            'nvcc': '',
        },
    ],
}
