"""ReFrame site configuration for the Alps GH200 vClusters at CSCS (daint, clariden,
santis), shaped like the centre's own: one system per vCluster, each with a `login`
partition (local, no compute features: no mempath check lands there) and a `normal`
partition (Slurm, `+remote +nvgpu +uenv`, quad-GH200 nodes), the programming environment
from a uenv. The checks select partitions and environments by feature only, so a centre
can equally point its own configuration at reframe_checks/.

    export SBATCH_ACCOUNT=g123                # or MEMPATH_ALPS_ACCOUNT: the --account
    reframe -C site_configs/alps.py -c reframe_checks -r --tag acceptance

Node: 4 Grace sockets (NUMA 0-3, 72 Neoverse V2 cores each), 4 Hopper GPUs (sm_90); GPU g
is attached to socket g and its HBM is NUMA node 4 + 8 g. References (references.py) are
keyed by that processor/GPU architecture, so they apply on every vCluster.

Environment variables (read when the configuration loads):
  MEMPATH_ALPS_PARTITION  Slurm partition of `normal` (default: normal)
  MEMPATH_ALPS_ACCOUNT    Slurm account (default: none given: SBATCH_ACCOUNT, which sbatch
                          reads itself, or Slurm's default account)
  MEMPATH_ALPS_TIME       time limit of each job (default: 30m)
  MEMPATH_ALPS_UENV       uenv image to build and run in (default: prgenv-gnu/24.11:v2);
                          set it empty to use modules instead
  MEMPATH_ALPS_UENV_VIEW  uenv view (default: default)
  MEMPATH_ALPS_MODULES    modules to load instead of / besides a uenv, space-separated
                          (e.g. "cray PrgEnv-gnu cudatoolkit cray-hdf5")
"""
from __future__ import annotations

import os

VCLUSTERS = ('daint', 'clariden', 'santis')

_PARTITION = os.environ.get('MEMPATH_ALPS_PARTITION', 'normal')
_ACCOUNT = os.environ.get('MEMPATH_ALPS_ACCOUNT', '')
_TIME = os.environ.get('MEMPATH_ALPS_TIME', '30m')
_UENV = os.environ.get('MEMPATH_ALPS_UENV', 'prgenv-gnu/24.11:v2')
_UENV_VIEW = os.environ.get('MEMPATH_ALPS_UENV_VIEW', 'default')
_MODULES = os.environ.get('MEMPATH_ALPS_MODULES', '').split()

_ACCESS = [f'--partition={_PARTITION}']
if _ACCOUNT:
    _ACCESS.append(f'--account={_ACCOUNT}')

#: A quad-GH200 node as ReFrame describes it (what the checks read: num_cpus for the one
#: whole-node task, the GPUs for --gpus-per-node, the archs for the references).
GH200_PROCESSOR = {
    'arch': 'neoverse_v2',
    'num_cpus': 288,
    'num_cpus_per_core': 1,
    'num_cpus_per_socket': 72,
    'num_sockets': 4,
}
GH200_DEVICES = [{'type': 'gpu', 'arch': 'sm_90', 'num_devices': 4}]


def _vcluster(name: str) -> dict:
    return {
        'name': name,
        'descr': f'{name}: CSCS Alps GH200 vCluster',
        # The login nodes (`daint-ln001`) and the compute nodes (`nid001234`) of every
        # vCluster share the nid names: a run on a compute node needs `--system NAME`.
        'hostnames': [rf'^{name}'],
        'modules_system': 'lmod' if _MODULES else 'nomod',
        'partitions': [
            {
                'name': 'login',
                'descr': f'{name} login nodes',
                'scheduler': 'local',
                'launcher': 'local',
                'time_limit': '10m',
                'environs': ['builtin'],
                'features': ['login'],
            },
            {
                'name': 'normal',
                'descr': 'Quad GH200 nodes (4 Grace + 4 Hopper per node)',
                'scheduler': 'slurm',
                'launcher': 'srun',
                'access': _ACCESS,
                'time_limit': _TIME,
                'environs': ['prgenv-gnu'],
                'max_jobs': 100,
                'features': ['remote', 'gpu', 'nvgpu', 'mpi', 'uenv'],
                'processor': GH200_PROCESSOR,
                'devices': GH200_DEVICES,
                'resources': [
                    # A check's num_gpus_per_node (the partition's devices) becomes this.
                    {'name': '_rfm_gpu', 'options': ['--gpus-per-node={num_gpus_per_node}']},
                    # Filled by an environment's `resources` (the uenv of prgenv-gnu);
                    # Slurm's uenv plugin mounts it in the batch job, builds included.
                    {'name': 'uenv', 'options': ['--uenv={image}', '--view={view}']},
                ],
            },
        ],
    }


site_configuration = {
    'systems': [_vcluster(name) for name in VCLUSTERS],
    'environments': [
        {
            'name': 'prgenv-gnu',
            'target_systems': list(VCLUSTERS),
            'features': ['compiler', 'cuda', 'mpi'] + (['uenv'] if _UENV else []),
            'modules': _MODULES,
            'resources': {'uenv': {'image': _UENV, 'view': _UENV_VIEW}} if _UENV else {},
            'cc': 'gcc',
            'cxx': 'g++',
            'ftn': '',
            'nvcc': 'nvcc',
        },
        {
            # The login partition's: no compute features, so no check selects it.
            'name': 'builtin',
            'target_systems': list(VCLUSTERS),
            'cc': 'cc',
            'cxx': 'CC',
            'ftn': '',
        },
    ],
}
