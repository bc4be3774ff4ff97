"""Unified-memory behaviour (`mempath um`) and the allocator matrix (`mempath
allocmatrix`), valid only on NVIDIA GPU partitions (`+nvgpu`), tag `full`.

The binary measures; these checks launch it, keep the HDF5 file and turn its summary
lines into performance variables:
    MempathUnifiedMemory     `{exp}_{alloc}_{metric}`, e.g. `inplace_managed_first_GBps`,
                             `evict_managed_cold_GBps`, `interleave_managed_gpu_iter_us_n1`
    MempathAllocatorMatrix   `{src_class}_to_{dst_class}_min`: the slowest cudaMemcpy
                             (median GB/s) between allocators of these classes
                             (mempath_summary.ALLOC_CLASS: pageable, pagelocked,
                             managed, device), e.g. `pagelocked_to_device_min`
No references yet: these record behaviour (migrations, evictions) to compare runs with.
Variables (`-S CHECK.NAME=VALUE`): size, reps, extra_options.
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import variable

import mempath_run
from mempath_summary import ClassMetric, Metric, SummaryLine


class UnifiedMemoryMetrics:
    """Every figure of an `ok` line: `*_GBps` fields in GB/s, `*_us_*` fields in us."""

    @staticmethod
    def values(lines: list[SummaryLine]) -> dict[str, tuple[float, str]]:
        values = {}
        for s in lines:
            if s.status != 'ok':
                continue
            for key in s.fields:
                unit = 'GB/s' if key.endswith('_GBps') else 'us' if '_us_' in key else None
                value = s.number(key) if unit else None
                if value is not None:
                    values[f"{s['exp']}_{s['alloc']}_{key}"] = (value, unit)
        return values


class MempathGpuCommand(mempath_run.MempathCommand, mempath_run.WholeNode):
    """One `mempath SUBCOMMAND --size --reps --output FILE` on a GPU partition."""

    #: Bytes per buffer (`--size`); empty: the binary's default.
    size = variable(str, value='')
    #: Repetitions (`--reps`); None: the binary's default.
    reps = variable(int, type(None), value=None)
    flags = (('--size', 'size'), ('--reps', 'reps'))
    valid_systems = mempath_run.GPU_NODES


@rfm.simple_test
class MempathUnifiedMemory(MempathGpuCommand):
    descr = 'unified-memory behaviour: migrations, in-place updates, evictions'
    tags = {'full', 'gpu'}
    output_file = 'um.h5'
    subcommand = 'um'
    metric = UnifiedMemoryMetrics()


@rfm.simple_test
class MempathAllocatorMatrix(MempathGpuCommand):
    descr = 'cudaMemcpy between every pair of allocators'
    tags = {'full', 'gpu'}
    output_file = 'allocmatrix.h5'
    subcommand = 'allocmatrix'
    metric = ClassMetric(Metric('{src_alloc}_{src_mem}_to_{dst_alloc}_{dst_mem}', 'median_GBps', 'GB/s'),
                         '{src_alloc_class}_to_{dst_alloc_class}')
