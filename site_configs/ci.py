"""ReFrame site configuration for the CI's two-node Slurm cluster (shared/SLURM_CI.md):
nodes `n1` and `n2` in their own network namespaces on one CI machine, Slurm without
accounting, Open MPI through PMIx.

NOTE: only the shape for now. Starting the cluster and running checks on it comes with the
scale-out (multi-node) work; until then nothing runs this configuration except the test
that loads it (tests/python/test_reframe.py).

    ip netns exec <node1-ns> reframe -C site_configs/ci.py -c reframe_checks -r \
        --exec-policy=serial --tag acceptance

Environment variables (read when the configuration loads):
  MEMPATH_CI_PARTITION  Slurm partition to submit to (default: Slurm's default one)
"""
from __future__ import annotations

import os

_PARTITION = os.environ.get('MEMPATH_CI_PARTITION', '')

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
                    'scheduler': 'squeue',
                    'launcher': 'srun',
                    'access': [f'--partition={_PARTITION}'] if _PARTITION else [],
                    'time_limit': '10m',
                    'environs': ['builtin'],
                    'max_jobs': 1,
                    'features': ['mpi'],
                    'env_vars': [
                        # = `srun --mpi=pmix` for every launch (Debian's Open MPI has no PMI-2).
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
            'cc': 'cc',
            'cxx': 'c++',
            'ftn': '',
            'nvcc': '',
        },
    ],
}
