"""ReFrame site configuration for any Linux box: local scheduler and launcher, one
partition, one environment.

    reframe -C site_configs/generic.py -c reframe_checks -r --tag acceptance

The processor topology is left to ReFrame's auto-detection (done on this host, cached in
~/.reframe/topology). GPUs are detected here, when the configuration loads, cheaply
(`nvidia-smi -L`, else /dev/nvidia0): only then does the partition get the `gpu` and
`nvgpu` features that the GPU checks ask for (and its environment `cuda` where nvcc is on
PATH).

Features as centres declare them: the one partition is `remote` because on a lone box the
checks' jobs run on the node measured (ReFrame's `remote` marks a partition of compute
nodes, which the checks ask for); the environment offers a `compiler` (the build fixture).
"""
from __future__ import annotations

import os
import shutil
import subprocess


def _nvidia_gpus() -> int:
    """Number of NVIDIA GPUs this host shows; -1 when one exists but cannot be counted."""
    smi = shutil.which('nvidia-smi')
    if smi:
        try:
            out = subprocess.run([smi, '-L'], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            out = None
        if out is not None and out.returncode == 0:
            return sum(line.startswith('GPU ') for line in out.stdout.splitlines())
    return -1 if os.path.exists('/dev/nvidia0') else 0


def _gpu_entries(count: int) -> dict:
    if count == 0:
        return {'features': ['remote'], 'devices': []}
    devices = [{'type': 'gpu', 'num_devices': count}] if count > 0 else []
    return {'features': ['remote', 'gpu', 'nvgpu'], 'devices': devices}


_GPU = _gpu_entries(_nvidia_gpus())
_NVCC = shutil.which('nvcc')

site_configuration = {
    'systems': [
        {
            'name': 'linux',
            'descr': 'Any Linux host, tests run locally',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'default',
                    'descr': 'This host' + (' (NVIDIA GPU)' if _GPU['devices'] or 'nvgpu' in _GPU['features'] else ''),
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['builtin'],
                    'features': _GPU['features'],
                    'devices': _GPU['devices'],
                    'max_jobs': 1,   # bandwidth checks must not share the node
                },
            ],
        },
    ],
    'environments': [
        {
            'name': 'builtin',
            'target_systems': ['linux'],
            'features': ['compiler'] + (['cuda'] if _NVCC else []),
            'cc': 'cc',
            'cxx': 'c++',
            'ftn': '',
            # Empty: CMake looks for CUDA itself (PATH, CUDA_PATH, /usr/local/cuda).
            'nvcc': _NVCC or '',
        },
    ],
}
