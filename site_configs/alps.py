"""ReFrame site configuration for the Alps GH200 vClusters at CSCS (daint, clariden,
santis): quad-GH200 nodes, Slurm, the programming environment from a uenv.

    export MEMPATH_ALPS_ACCOUNT=g123          # optional: --account
    reframe -C site_configs/alps.py -c reframe_checks -r --tag acceptance

Node: 4 Grace sockets (NUMA 0-3, 72 Neoverse V2 cores each), 4 Hopper GPUs; GPU g is
attached to socket g and its HBM is NUMA node 4 + 8 g.

Environment variables (read when the configuration loads):
  MEMPATH_ALPS_PARTITION  Slurm partition (default: normal)
  MEMPATH_ALPS_ACCOUNT    Slurm account (default: none given, Slurm's default account)
  MEMPATH_ALPS_TIME       time limit of each job (default: 30m)
  MEMPATH_ALPS_UENV       uenv image to build and run in (default: prgenv-gnu/24.11:v2);
                          set it empty to use modules instead
  MEMPATH_ALPS_UENV_VIEW  uenv view (default: default)
  MEMPATH_ALPS_MODULES    modules to load instead of / besides a uenv, space-separated
                          (e.g. "cray PrgEnv-gnu cudatoolkit cray-hdf5")
"""
from __future__ import annotations

import os

_PARTITION = os.environ.get('MEMPATH_ALPS_PARTITION', 'normal')
_ACCOUNT = os.environ.get('MEMPATH_ALPS_ACCOUNT', '')
_TIME = os.environ.get('MEMPATH_ALPS_TIME', '30m')
_UENV = os.environ.get('MEMPATH_ALPS_UENV', 'prgenv-gnu/24.11:v2')
_UENV_VIEW = os.environ.get('MEMPATH_ALPS_UENV_VIEW', 'default')
_MODULES = os.environ.get('MEMPATH_ALPS_MODULES', '').split()

_ACCESS = [f'--partition={_PARTITION}', '--gpus-per-node=4']
if _ACCOUNT:
    _ACCESS.append(f'--account={_ACCOUNT}')

site_configuration = {
    'systems': [
        {
            'name': 'alps',
            'descr': 'CSCS Alps GH200 vClusters (daint, clariden, santis)',
            'hostnames': [r'^daint', r'^clariden', r'^santis', r'^nid\d+'],
            'modules_system': 'lmod' if _MODULES else 'nomod',
            'partitions': [
                {
                    'name': 'gh200',
                    'descr': 'Quad GH200 nodes (4 Grace + 4 Hopper per node)',
                    'scheduler': 'slurm',
                    'launcher': 'srun',
                    'access': _ACCESS,
                    'time_limit': _TIME,
                    'environs': ['prgenv-gnu'],
                    'max_jobs': 100,
                    'features': ['gpu', 'nvgpu', 'mpi', 'uenv'],
                    'processor': {
                        'arch': 'neoverse_v2',
                        'num_cpus': 288,
                        'num_cpus_per_core': 1,
                        'num_cpus_per_socket': 72,
                        'num_sockets': 4,
                    },
                    'devices': [
                        {'type': 'gpu', 'arch': 'sm_90', 'num_devices': 4},
                    ],
                    # Filled by an environment's `resources` (the uenv of prgenv-gnu);
                    # Slurm's uenv plugin mounts it in the batch job, builds included.
                    'resources': [
                        {'name': 'uenv', 'options': ['--uenv={image}', '--view={view}']},
                    ],
                },
            ],
        },
    ],
    'environments': [
        {
            'name': 'prgenv-gnu',
            'target_systems': ['alps'],
            'features': ['cuda', 'uenv'] if _UENV else ['cuda'],
            'modules': _MODULES,
            'resources': {'uenv': {'image': _UENV, 'view': _UENV_VIEW}} if _UENV else {},
            'cc': 'gcc',
            'cxx': 'g++',
            'ftn': '',
            'nvcc': 'nvcc',
        },
    ],
}
