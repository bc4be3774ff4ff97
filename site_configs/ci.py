"""ReFrame site configuration for the CI's two-node Slurm cluster (slurm/ci/cluster.sh,
docs/reframe.md "The CI Slurm cluster"): nodes `n1` and `n2` in their own network
namespaces on one CI machine, Slurm partition `ci` without accounting, Open MPI through
PMIx. Run ReFrame beside node n1, where the hostname is `n1` and this system selects
itself:

    slurm/ci/cluster.sh start
    slurm/ci/cluster.sh exec .venv/bin/reframe -C site_configs/ci.py -c reframe_checks -r \
        --exec-policy=serial --tag acceptance
    slurm/ci/cluster.sh stop

Every node shares the machine's cores (`num_cpus` below is this machine's): timings from
this system are functional only. Features as a centre declares them: the partition `remote`
(Slurm compute nodes) and `mpi`, the environment `compiler` and `mpi`; the checks select by
feature only.

On a GPU machine (cluster.sh gives the nodes its GPUs as gres) the one partition is `ci:gpu`
instead of `ci:cpu`, with the features `gpu` and `nvgpu` as well and the nodes' GPUs as its
`devices` (the most any node lists, read from `scontrol show node` when this file loads; the
architecture from nvidia-smi), so the GPU checks run there and ask Slurm for the GPUs
(`--gpus-per-node`), as on Alps.

Environment variables (read when the configuration loads):
  MEMPATH_CI_PARTITION  Slurm partition to submit to (default: `ci`, cluster.sh's)
  MEMPATH_CI_GPUS       GPUs per node instead of what Slurm lists (0: the CPU partition)
"""
from __future__ import annotations

import os
import re
import subprocess

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


def _slurm_gpus() -> int:
    """The most GPUs (gres `gpu`) any node of the cluster lists; 0 without Slurm or GPUs."""
    try:
        out = subprocess.run(['scontrol', 'show', 'node', '-o'], capture_output=True,
                             text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return max((int(m) for m in re.findall(r'\bGres=gpu(?::[\w-]+)?:(\d+)', out)), default=0)


def _gpu_arch() -> str:
    """sm_XY of the machine's first GPU (nvidia-smi's compute capability); '' if unknown."""
    try:
        out = subprocess.run(['nvidia-smi', '--query-gpu=compute_cap', '--format=csv,noheader'],
                             capture_output=True, text=True, timeout=20).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return ''
    return f"sm_{out[0].replace('.', '')}" if out and re.fullmatch(r'\d+\.\d+', out[0]) else ''


_GPUS = (int(os.environ['MEMPATH_CI_GPUS']) if os.environ.get('MEMPATH_CI_GPUS', '').isdigit()
         else _slurm_gpus())
_GPU_PARTITION = {
    'name': 'gpu',
    'descr': 'the nodes with their GPUs (they share the machine: timings are functional only)',
    'features': ['remote', 'mpi', 'gpu', 'nvgpu'],
    'devices': [{'type': 'gpu', 'arch': _gpu_arch(), 'num_devices': _GPUS}],
    # A check's num_gpus_per_node (the partition's devices) becomes this, as on Alps.
    'resources': [{'name': '_rfm_gpu', 'options': ['--gpus-per-node={num_gpus_per_node}']}],
}

site_configuration = {
    'systems': [
        {
            'name': 'ci',
            'descr': 'CI: Slurm nodes in network namespaces of one machine',
            'hostnames': [r'^n[0-9]+$'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'cpu',
                    'descr': 'the nodes (they share the same cores: timings are functional only)',
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
                    **(_GPU_PARTITION if _GPUS else {}),
                },
            ],
        },
    ],
    'environments': [
        {
            'name': 'builtin',
            'target_systems': ['ci'],
            # `cuda` where the nodes have GPUs: the GPU checks ask for it.
            'features': ['compiler', 'mpi'] + (['cuda'] if _GPUS else []),
            'cc': 'cc',
            'cxx': 'c++',
            'ftn': '',
            'nvcc': 'nvcc' if _GPUS else '',
        },
    ],
}
