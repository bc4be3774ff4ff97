"""Application checks: STREAM-class bandwidth (`mempath stream`) and cuBLAS GEMM
under operand placement (`mempath gemm`). The LLM decode under weight placement
(`mempath llm`) runs as the paper checks MempathPaperLlm7b, MempathPaperLlm13b and
MempathPaperLlmOffload (paper.py).

    MempathStream         tag acceptance, every partition: `stream --all --threads all
                          --alloc numa,device --mem local-host,local-hbm,peer-host,
                          peer-hbm,interleave` (all cores of each CPU, each GPU, each
                          memory role with the path's usual allocator); `{kernel}_GBps_
                          {pu_kind}_{mem_kind}_{via}_{alloc}_min` for copy and triad: the
                          slowest path of the class at its best thread count (STREAM's
                          figure), e.g. `triad_GBps_cpu_numa_local_numa_min`.
    MempathStreamSweep    tag full, one check per allocator (`%alloc=`; CUDA allocators
                          on `+nvgpu`): `stream --all --alloc ALLOC`, thread sweeps; the
                          same variables.
    MempathGemm           tags acceptance, gpu: `gemm --size 8192 --dtype fp16,fp64`,
                          operands in the GPU's memory; `tflops_{dtype}_{mem_kind}_{via}_
                          {alloc_class}_min` (median TFLOP/s at the largest order; the
                          allocator's class, mempath_summary.ALLOC_CLASS).
    MempathGemmPlacement  tags full, gpu: `gemm --all --dtype fp16,fp64`, every memory the
                          GPU reads, the size sweep; the same variables.
                          Only lines with A and B in one placement count (`--ab
                          independent` pairs stay in gemm.h5).

Every path, kernel, thread count and size stays in the HDF5 file.
Sanity as the latency checks (latency.py): exit code 0, an ok line, every line ok or
skipped, the HDF5 file written, every ok line `verified=1` (the arrays hold what the kernels'
recurrence predicts). Variables: pus, mems, size, reps, extra_options.
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import parameter

import mempath_run
import references
from latency import MempathVerifiedCommand
from mempath_run import ACCEPTANCE_TIME_LIMIT, FULL_TIME_LIMIT
from mempath_summary import ClassMetric, Metric


class MempathApplicationCommand(MempathVerifiedCommand):
    """A verified mempath application run; variables are best-of-run figures (a thread
    sweep gives one name several values: its best thread count wins)."""

    resolve_references = staticmethod(references.resolve_applications)


class MempathStreamCommand(MempathApplicationCommand):
    subcommand = 'stream'
    output_file = 'stream.h5'
    # STREAM's two headline kernels per class (scale/mul, add, dot stay in stream.h5).
    metric = ClassMetric(Metric('{kernel}_{pu}_{mem}_{alloc}', 'best_GBps', 'GB/s', keep=''),
                         '{kernel}_GBps_{pu_kind}_{mem_kind}_{via}_{alloc}',
                         only=('kernel', ('copy', 'triad')))


class MempathGemmCommand(MempathApplicationCommand):
    subcommand = 'gemm'
    output_file = 'gemm.h5'
    valid_systems = mempath_run.GPU_NODES
    # At the largest order; pinned/registered and system/numa in one class each
    # (mempath_summary.ALLOC_CLASS): the SMs read them alike. A and B in one placement
    # only: `--ab independent` pairs (mem= is A's, b_mem= B's) stay in gemm.h5.
    metric = ClassMetric(Metric('{gpu}_{dtype}_{mem}_{alloc}', 'median_TFLOPs', 'TFLOP/s', keep='n'),
                         'tflops_{dtype}_{mem_kind}_{via}_{alloc_class}',
                         same=(('mem', 'b_mem'), ('alloc', 'b_alloc')))

    def command(self) -> list[str]:
        if self.size:
            raise ValueError('mempath gemm sizes are matrix orders: put --size in extra_options')
        return super().command()


@rfm.simple_test
class MempathStream(MempathStreamCommand):
    descr = 'mempath stream --all --threads all: STREAM-class bandwidth of every path'
    tags = {'applications', 'acceptance'}
    time_limit = ACCEPTANCE_TIME_LIMIT
    case_options = ['--all', '--threads', 'all', '--alloc', 'numa,device']
    mems = f'{mempath_run.MEMORY_ROLES},interleave'


# One check per allocator (mempath_run.PerAllocator): ~90 classes at once on a quad GH200.
@rfm.simple_test
class MempathStreamSweep(MempathStreamCommand, mempath_run.PerAllocator):
    descr = 'mempath stream --all: STREAM by thread count, one allocator'
    tags = {'applications', 'full'}
    time_limit = FULL_TIME_LIMIT
    case_options = ['--all']
    alloc = parameter(mempath_run.ALLOCATORS)
    mems = f'{mempath_run.MEMORY_ROLES},interleave'


@rfm.simple_test
class MempathGemm(MempathGemmCommand):
    descr = 'mempath gemm: cuBLAS TFLOP/s with operands in HBM'
    tags = {'applications', 'acceptance', 'gpu'}
    time_limit = ACCEPTANCE_TIME_LIMIT
    case_options = ['--size', '8192', '--dtype', 'fp16,fp64']


@rfm.simple_test
class MempathGemmPlacement(MempathGemmCommand):
    descr = 'mempath gemm --all: cuBLAS TFLOP/s under operand placement'
    tags = {'applications', 'full', 'gpu'}
    time_limit = FULL_TIME_LIMIT
    case_options = ['--all', '--dtype', 'fp16,fp64']
    mems = mempath_run.MEMORY_ROLES
