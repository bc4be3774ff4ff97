"""The paper set as ReFrame checks, tag `paper` (docs/paper.md): one check per step of
paper_set.STEPS, the list slurm/paper.sbatch runs too, so a centre gathers the study with

    reframe -C site_configs/alps.py -c reframe_checks -r --tag paper
    python -m analysis paper <ReFrame output folder> -o paper/

Each check runs its step's command into its own output folder and keeps the HDF5 file;
sanity is every mempath check's (exit code 0, summary lines sane, the file written, every
ok case verified where the family verifies). The figures are drawn by the analysis from the
kept files, never inside ReFrame. Single-node steps run on `+remote` (GPU steps on
`+nvgpu`) partitions; the multi-node ones on `+mpi` partitions, with `nodes` (default 2).
The LLM steps (`mempath llm`) get `--referee` from the variable `referee` (the Python with
PyTorch) and report each placement's tokens/s and fraction of its bound
(mempath_summary.LlmMetric).
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import run_after, variable

import mempath_run
import paper_set
from mempath_summary import LlmMetric
from scaleout import MpiJob

#: Families whose summary lines carry `verified=` (the rest check their data otherwise).
VERIFIED = {'bw', 'chase', 'pingpong', 'gemm', 'um', 'allocmatrix', 'llm'}
#: Families whose summary lines give the steps' performance variables (the others': none).
METRICS = {'llm': LlmMetric()}
VALID_SYSTEMS = {'cpu': mempath_run.CPU_NODES, 'gpu': mempath_run.GPU_NODES,
                 'gpu-ranks': mempath_run.MPI_GPU_NODES, 'nodes': mempath_run.MPI_NODES}


class MempathPaperStep(mempath_run.MempathCommand, mempath_run.WholeNode):
    """One single-node step of the paper set: `mempath ARGS --output FILE` (the LLM steps
    `mempath llm ARGS --referee PYTHON --output FILE`)."""

    step_name = ''

    #: The Python that runs the LLM steps' referee (`mempath llm --referee`): PyTorch must
    #: import there.
    referee = variable(str, value='python3')

    @property
    def step(self) -> paper_set.Step:
        return paper_set.step(self.step_name)

    @run_after('init')
    def from_step(self):
        s = self.step
        self.valid_systems = VALID_SYSTEMS[s.needs]
        self.bench = s.family
        self.verified = s.family in VERIFIED

    def command(self) -> list[str]:
        referee = ['--referee', self.referee] if self.step.subcommand == 'llm' else []
        return [*self.step.args, *referee, '--output', self.output_file, *self.extra_options]


class MempathPaperMpiStep(mempath_run.MempathCommand, MpiJob):
    """A step of mempath-mpi: one rank per GPU of one node (Fig. 18) or four per node over
    `nodes` nodes (Figs. 14, 19)."""

    step_name = ''
    binary = 'mpi_executable_path'
    time_limit = mempath_run.SCALEOUT_TIME_LIMIT

    @run_after('init')
    def from_step(self):
        s = paper_set.step(self.step_name)
        # NCCL needs GPUs on every node, MPI bandwidth only the network.
        self.valid_systems = mempath_run.MPI_GPU_NODES if s.family == 'nccl' else VALID_SYSTEMS[s.needs]
        self.bench = s.family
        self.one_rank_per_gpu = s.family == 'nccl'
        if s.needs == 'gpu-ranks':
            self.nodes = 1
        elif s.family == 'mpi_bw':
            self.ppn = 4

    def command(self) -> list[str]:
        s = paper_set.step(self.step_name)
        return [*s.args, '--output', self.output_file, *self.extra_options]


def paper_step(cls: type) -> type:
    """Register a step's check, named as its row of paper_set.STEPS (the list
    slurm/paper.sbatch runs too): the row gives its description, tags, result file and time
    limit, set on the class so that `-S` overrides them as any check's, and its family the
    performance variables (METRICS)."""
    s = paper_set.step(cls.__name__)
    cls.step_name = s.check
    cls.descr = f'paper set, {s.figures}: {s.program} {" ".join(s.args)}'
    cls.tags = {'paper', s.family}
    cls.output_file = s.output
    cls.time_limit = f'{s.minutes}m'
    cls.metric = METRICS.get(s.family)
    return rfm.simple_test(cls)


@paper_step
class MempathPaperBandwidthCpu(MempathPaperStep):
    pass


@paper_step
class MempathPaperBandwidthGpu(MempathPaperStep):
    pass


@paper_step
class MempathPaperCopyScalingCpu(MempathPaperStep):
    pass


@paper_step
class MempathPaperCopyScalingGpu(MempathPaperStep):
    pass


@paper_step
class MempathPaperContention(MempathPaperStep):
    pass


@paper_step
class MempathPaperAllocatorCopies(MempathPaperStep):
    pass


@paper_step
class MempathPaperAtsVsManaged(MempathPaperStep):
    pass


@paper_step
class MempathPaperLatencyCpu(MempathPaperStep):
    pass


@paper_step
class MempathPaperLatencyGpu(MempathPaperStep):
    pass


@paper_step
class MempathPaperPingPong(MempathPaperStep):
    pass


@paper_step
class MempathPaperGemmPlacement(MempathPaperStep):
    pass


@paper_step
class MempathPaperGemmScalingDtype(MempathPaperStep):
    pass


@paper_step
class MempathPaperGemmScalingFp32Fp64(MempathPaperStep):
    pass


@paper_step
class MempathPaperGemmScalingPlacement(MempathPaperStep):
    pass


@paper_step
class MempathPaperLlm7b(MempathPaperStep):
    pass


@paper_step
class MempathPaperLlm13b(MempathPaperStep):
    pass


@paper_step
class MempathPaperLlmOffload(MempathPaperStep):
    pass


@paper_step
class MempathPaperNccl(MempathPaperMpiStep):
    pass


@paper_step
class MempathPaperMpiBandwidth(MempathPaperMpiStep):
    pass


@paper_step
class MempathPaperNcclNodes(MempathPaperMpiStep):
    pass
