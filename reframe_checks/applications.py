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

import reframe as rfm

import mempath_run
import references
from latency import MempathLatencyCommand


class MempathApplicationCommand(MempathLatencyCommand):
    """A verified mempath application run; variables are best-of-run figures."""

    tags = {'applications'}
    resolve_references = staticmethod(references.resolve_applications)
    #: Summary field holding the figure, and its unit.
    figure, unit = 'best_GBps', 'GB/s'

    def run_options(self) -> list[str]:
        opts = ['--size', self.size] if self.size else []
        return opts + (['--reps', str(self.reps)] if self.reps is not None else [])

    def perf_values(self, fields: list[dict[str, str]]) -> dict[str, tuple[float, str]]:
        """The highest figure per variable name (a thread sweep gives one name several
        values: its best thread count wins)."""
        values: dict[str, tuple[float, str]] = {}
        for f in fields:
            if f.get('status') != 'ok' or not f.get(self.figure):
                continue
            name, v = self.perf_name(f), float(f[self.figure])
            if v > values.get(name, (-1.0, ''))[0]:
                values[name] = (v, self.unit)
        return values


class MempathStreamCommand(MempathApplicationCommand):
    subcommand = 'stream'
    output_file = 'stream.h5'

    @staticmethod
    def perf_name(f):
        return f"{f['kernel']}_GBps_{f['pu']}_{f['mem']}_{f['alloc']}"


@rfm.simple_test
class MempathStream(MempathStreamCommand):
    """STREAM / BabelStream kernels on every processor x memory, all cores."""

    descr = 'mempath stream --all --threads all: STREAM-class bandwidth of every path'
    tags = {'applications', 'acceptance'}
    time_limit = mempath_run.ACCEPTANCE_TIME_LIMIT
    case_options = ['--all', '--threads', 'all', '--alloc', 'numa,device']


@rfm.simple_test
class MempathStreamSweep(MempathStreamCommand):
    """Thread sweeps (best thread count recorded) and every allocator."""

    descr = 'mempath stream --all: STREAM by thread count, every allocator'
    tags = {'applications', 'full'}
    case_options = ['--all']


class MempathGemmCommand(MempathApplicationCommand):
    subcommand = 'gemm'
    output_file = 'gemm.h5'
    valid_systems = ['+nvgpu']
    figure, unit = 'median_TFLOPs', 'TFLOP/s'

    @staticmethod
    def perf_name(f):
        return f"tflops_{f['dtype']}_{f['mem']}_{f['alloc']}_n{f['n']}"

    def run_options(self) -> list[str]:
        if self.size:
            raise ValueError('mempath gemm sizes are matrix orders: put --size in extra_options')
        return ['--reps', str(self.reps)] if self.reps is not None else []


@rfm.simple_test
class MempathGemm(MempathGemmCommand):
    """cuBLAS GEMM fp16 and fp64 at 8192 with the operands in the GPU's own memory."""

    descr = 'mempath gemm: cuBLAS TFLOP/s with operands in HBM'
    tags = {'applications', 'acceptance', 'gpu'}
    time_limit = mempath_run.ACCEPTANCE_TIME_LIMIT
    case_options = ['--size', '8192', '--dtype', 'fp16,fp64']


@rfm.simple_test
class MempathGemmPlacement(MempathGemmCommand):
    """The size sweep with A and B in every memory the GPU reads."""

    descr = 'mempath gemm --all: cuBLAS TFLOP/s under operand placement'
    tags = {'applications', 'full', 'gpu'}
    case_options = ['--all', '--dtype', 'fp16,fp64']

