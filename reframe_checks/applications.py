"""Application checks (issue 6): STREAM-class bandwidth (`mempath stream`), cuBLAS GEMM
under operand placement (`mempath gemm`) and LLM decode under weight placement
(`src/llm/llm_placement.py`).

    MempathStream         tag acceptance, every partition: `stream --all --threads all
                          --alloc numa,device` (all cores of each CPU, each GPU, every
                          memory with the path's usual allocator); `{kernel}_GBps_{pu}_
                          {mem}_{alloc}` (best GB/s, STREAM's figure).
    MempathStreamSweep    tag full: `stream --all`, thread sweeps and every allocator;
                          the same variables at the best thread count.
    MempathGemm           tags acceptance, gpu: `gemm --size 8192 --dtype fp16,fp64`,
                          operands in the GPU's memory; `tflops_{dtype}_{mem}_{alloc}_n{n}`
                          (median TFLOP/s).
    MempathGemmPlacement  tags full, gpu: `gemm --all --dtype fp16,fp64`, every memory the
                          GPU reads, the size sweep; the same variables.

Sanity as the latency checks (latency.py): exit code 0, an ok line, every line ok or
skipped, the HDF5 file written, every ok case `verified` (the arrays hold what the kernels'
recurrence predicts). Variables: pus, mems, size, reps, extra_options.
"""
from __future__ import annotations

import reframe  # noqa: F401 (ReFrame loads only the files that import it)

import mempath_run
import references
from latency import MempathVerifiedCommand
from mempath_run import ACCEPTANCE_TIME_LIMIT, FULL_TIME_LIMIT, Row
from mempath_summary import Metric


class MempathApplicationCommand(MempathVerifiedCommand):
    """A verified mempath application run; variables are best-of-run figures (a thread
    sweep gives one name several values: its best thread count wins)."""

    resolve_references = staticmethod(references.resolve_applications)


class MempathStreamCommand(MempathApplicationCommand):
    subcommand = 'stream'
    output_file = 'stream.h5'
    metric = Metric('{kernel}_GBps_{pu}_{mem}_{alloc}', 'best_GBps', 'GB/s', keep='')


class MempathGemmCommand(MempathApplicationCommand):
    subcommand = 'gemm'
    output_file = 'gemm.h5'
    valid_systems = mempath_run.GPU_NODES
    metric = Metric('tflops_{dtype}_{mem}_{alloc}_n{n}', 'median_TFLOPs', 'TFLOP/s', keep='')

    def command(self) -> list[str]:
        if self.size:
            raise ValueError('mempath gemm sizes are matrix orders: put --size in extra_options')
        return super().command()


mempath_run.define(globals(), MempathStreamCommand, (
    Row('MempathStream', time_limit=ACCEPTANCE_TIME_LIMIT,
        descr='mempath stream --all --threads all: STREAM-class bandwidth of every path',
        tags=frozenset({'applications', 'acceptance'}),
        case_options=('--all', '--threads', 'all', '--alloc', 'numa,device')),
    Row('MempathStreamSweep', time_limit=FULL_TIME_LIMIT,
        descr='mempath stream --all: STREAM by thread count, every allocator',
        tags=frozenset({'applications', 'full'}), case_options=('--all',)),
))
mempath_run.define(globals(), MempathGemmCommand, (
    Row('MempathGemm', time_limit=ACCEPTANCE_TIME_LIMIT,
        descr='mempath gemm: cuBLAS TFLOP/s with operands in HBM',
        tags=frozenset({'applications', 'acceptance', 'gpu'}),
        case_options=('--size', '8192', '--dtype', 'fp16,fp64')),
    Row('MempathGemmPlacement', time_limit=FULL_TIME_LIMIT,
        descr='mempath gemm --all: cuBLAS TFLOP/s under operand placement',
        tags=frozenset({'applications', 'full', 'gpu'}),
        case_options=('--all', '--dtype', 'fp16,fp64')),
))
