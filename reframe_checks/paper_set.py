#!/usr/bin/env python3
"""The paper set: every measurement the Alps GH200 paper's figures need (docs/paper.md),
as ONE list that both the ReFrame checks tagged `paper` (mempath_run.paper_rows) and
slurm/paper.sbatch run, so the two cannot drift.

    python3 reframe_checks/paper_set.py list                 # the steps, a line each
    python3 reframe_checks/paper_set.py commands --gpus 4 --nodes 1 --out DIR
        # the command lines a node runs (tab-separated: step, ranks, output, program, args)

Memories are named by role where a step must not depend on a node's NUMA numbering
(`local-host`, `local-hbm`, `peer-host`, `peer-hbm`, `local`: docs/cli.md, "Memory roles"),
so one list serves a quad GH200, a dual GH200 and an x86 GPU node. Standard library only:
this file runs on compute nodes with nothing but python3, and ReFrame loads it as a plain
module (it does not import reframe, so ReFrame does not take it for a check file).
"""
from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass

#: What a step needs to run: any node (cpu), a GPU node (gpu), one rank per GPU of a node
#: (gpu-ranks), several nodes (nodes: the multi-node figures).
NEEDS = ('cpu', 'gpu', 'gpu-ranks', 'nodes')
#: The programs a step runs.
PROGRAMS = ('mempath', 'mempath-mpi')


@dataclass(frozen=True)
class Step:
    check: str          # the ReFrame check's name
    family: str         # the summary lines' benchmark (bw, um, chase, gemm, llm, nccl...)
    figures: str        # the paper's figures and tables it feeds
    needs: str          # one of NEEDS
    program: str        # one of PROGRAMS
    output: str         # the HDF5 file it writes
    args: tuple[str, ...]
    minutes: int        # the check's time limit

    @property
    def subcommand(self) -> str:
        return self.args[0]


STEPS: tuple[Step, ...] = (
    Step('MempathPaperBandwidthCpu', 'bw', 'Fig. 7, Fig. 9', 'cpu', 'mempath', 'bw_cpu.h5',
         ('bw', '--all', '--pu', 'cpu0', '--threads', 'all', '--alloc', 'numa'), 30),
    Step('MempathPaperBandwidthGpu', 'bw', 'Fig. 7, Fig. 9', 'gpu', 'mempath', 'bw_gpu.h5',
         ('bw', '--all', '--pu', 'gpu0', '--kernel', 'grid', '--alloc', 'numa,device,pinned'), 30),
    Step('MempathPaperCopyScalingCpu', 'bw', 'Fig. 10', 'cpu', 'mempath', 'bw_copy_scaling_cpu.h5',
         ('bw', '--all', '--pu', 'cpu0', '--op', 'copy', '--mem', 'local', '--threads', 'sweep',
          '--alloc', 'numa'), 20),
    Step('MempathPaperCopyScalingGpu', 'bw', 'Fig. 10', 'gpu', 'mempath', 'bw_copy_scaling_gpu.h5',
         ('bw', '--all', '--pu', 'gpu0', '--op', 'copy', '--mem', 'local', '--threads', 'sweep',
          '--kernel', 'grid', '--alloc', 'numa,device,pinned'), 20),
    Step('MempathPaperContention', 'bw', 'Fig. 7 (contention)', 'gpu', 'mempath', 'bw_contention.h5',
         ('bw', '--all', '--pu', 'cpu0,gpu0', '--op', 'read,write', '--threads', 'all', '--kernel',
          'grid', '--alloc', 'numa,device,pinned', '--noise', 'partner'), 30),
    Step('MempathPaperAllocatorCopies', 'allocmatrix', 'Fig. 5, Table II', 'gpu', 'mempath',
         'allocmatrix.h5', ('allocmatrix',), 20),
    Step('MempathPaperAtsVsManaged', 'um', 'Fig. 4, Table II', 'gpu', 'mempath', 'um.h5',
         ('um', '--exp', 'interleave', '--mem', 'sweep'), 20),
    Step('MempathPaperLatencyCpu', 'chase', 'Fig. 11, Fig. 12', 'cpu', 'mempath', 'chase_cpu.h5',
         ('chase', '--all', '--pu', 'cpu0'), 20),
    Step('MempathPaperLatencyGpu', 'chase', 'Fig. 11, Fig. 12', 'gpu', 'mempath', 'chase_gpu.h5',
         ('chase', '--all', '--pu', 'gpu0'), 20),
    # 1,000 timed round trips a case, not 10,000: any 1,000 of a case's 10,000 have the
    # median of all within 5 % (the first 1,000 within 1.3 %; two H200s, 31 cases), and Fig.
    # 13 draws medians. A CPU-GPU round trip on a managed flag without ATS takes 1.25 ms:
    # 20 such cases were 213 of the step's 241 s on four H200s.
    Step('MempathPaperPingPong', 'pingpong', 'Fig. 13', 'gpu', 'mempath', 'pingpong.h5',
         ('pingpong', '--round-trips', '1000'), 20),
    Step('MempathPaperGemmPlacement', 'gemm', 'Fig. 15, Table III', 'gpu', 'mempath', 'gemm_placement.h5',
         ('gemm', '--gpu', '0', '--all', '--ab', 'independent', '--mem',
          'local-host,local-hbm,peer-host,peer-hbm', '--alloc', 'numa,device,pinned',
          '--matrix-bytes', '512MiB', '--dtype', 'fp16,fp64', '--reps', '3', '--warmup', '1'), 40),
    # Fig. 16's data types in local HBM: fp16 and tf32 to 65536 (their TFLOP/s fall past
    # 8192-16384: H200 fp16 890 -> 771, tf32 450 -> 371), fp32 and fp64 to 16384, past which
    # they are flat (54.0 / 54.6 / 54.9 and 65.4 / 65.7 / 65.7 TFLOP/s at 16384 / 32768 /
    # 65536 on two and on four H200s) at 106 of the 121 s the four types took to 65536.
    Step('MempathPaperGemmScalingDtype', 'gemm', 'Fig. 16', 'gpu', 'mempath', 'gemm_scaling_dtype.h5',
         ('gemm', '--gpu', '0', '--all', '--mem', 'local-hbm', '--alloc', 'device', '--size',
          '1024,2048,4096,8192,16384,32768,65536', '--dtype', 'fp16,tf32', '--reps', '3',
          '--warmup', '1'), 20),
    Step('MempathPaperGemmScalingFp32Fp64', 'gemm', 'Fig. 16', 'gpu', 'mempath', 'gemm_scaling_fp32_fp64.h5',
         ('gemm', '--gpu', '0', '--all', '--mem', 'local-hbm', '--alloc', 'device', '--size',
          '1024,2048,4096,8192,16384', '--dtype', 'fp32,fp64', '--reps', '3', '--warmup', '1'), 20),
    # fp16 in each placement, gemm's sweep: to 32768 in the GPU's memory, to 8192 where A or
    # B is read over a link (gemm_model.hpp, kGemmLinkSweepMax).
    Step('MempathPaperGemmScalingPlacement', 'gemm', 'Fig. 16', 'gpu', 'mempath', 'gemm_scaling_placement.h5',
         ('gemm', '--gpu', '0', '--all', '--mem', 'local-host,local-hbm,peer-host,peer-hbm',
          '--alloc', 'numa,device,pinned', '--size', 'sweep', '--dtype', 'fp16', '--reps', '3',
          '--warmup', '1'), 20),
    Step('MempathPaperLlm7b', 'llm', 'Fig. 17', 'gpu', 'mempath', 'llm_7b.h5',
         ('llm', '--model', 'llama-2-7b', '--dtype', 'fp16', '--new-tokens', '100',
          '--prompt-tokens', 'empty', '--placement', 'default,hbm,host,host-remote,peer'), 40),
    Step('MempathPaperLlm13b', 'llm', 'Fig. 17', 'gpu', 'mempath', 'llm_13b.h5',
         ('llm', '--model', 'llama-2-13b', '--dtype', 'fp16', '--new-tokens', '100',
          '--prompt-tokens', 'empty', '--placement', 'default,hbm,host,host-remote,peer'), 40),
    # Beyond the paper: the vLLM-on-GH200 thesis's question (a share of the layers in host
    # memory: read in place, streamed, vLLM's way), issue 48.
    Step('MempathPaperLlmOffload', 'llm', 'beyond: LLM offload', 'gpu', 'mempath', 'llm_offload.h5',
         ('llm', '--model', 'llama-2-7b', '--dtype', 'fp16', '--new-tokens', '48', '--prompt-tokens', 'empty',
          '--offload', '0,10%,20%,30%,50%,70%,all', '--reps', '2'), 20),
    Step('MempathPaperNccl', 'nccl', 'Fig. 18', 'gpu-ranks', 'mempath-mpi', 'nccl.h5',
         ('nccl', '--placement', 'device,hbm-system,host,peer,peer-host'), 30),
    Step('MempathPaperMpiBandwidth', 'mpi_bw', 'Fig. 14', 'nodes', 'mempath-mpi', 'mpi_bw.h5',
         ('bw', '--split'), 30),
    Step('MempathPaperNcclNodes', 'nccl', 'Fig. 19', 'nodes', 'mempath-mpi', 'nccl_nodes.h5',
         ('nccl', '--placement', 'device,hbm-system,host,peer,peer-host', '--paper-sizes'), 30),
)


def step(check: str) -> Step:
    for s in STEPS:
        if s.check == check:
            return s
    raise KeyError(check)


def runnable(gpus: int, nodes: int) -> list[Step]:
    """The steps a job of ``nodes`` nodes with ``gpus`` GPUs each runs."""
    ok = {'cpu'} | ({'gpu', 'gpu-ranks'} if gpus > 0 else set()) | ({'nodes'} if nodes > 1 else set())
    return [s for s in STEPS if s.needs in ok]


def ranks(s: Step, gpus: int, nodes: int) -> int:
    """MPI ranks of a step: one per GPU of one node, four per node across nodes (the paper's
    processes per node; mempath-mpi bw sweeps its own ranks per node), else one task."""
    if s.needs == 'gpu-ranks':
        return max(gpus, 1)
    if s.needs == 'nodes':
        return nodes * max(gpus, 1) if s.family == 'nccl' else nodes * 4
    return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog='paper_set.py', description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='what', required=True)
    sub.add_parser('list', help='every step, a line each')
    cmds = sub.add_parser('commands', help='the steps this job runs, tab-separated')
    cmds.add_argument('--gpus', type=int, required=True, help='GPUs per node')
    cmds.add_argument('--nodes', type=int, default=1, help='nodes of the job')
    cmds.add_argument('--out', required=True, help='folder of the result files')
    opts = parser.parse_args(argv)
    if opts.what == 'list':
        for s in STEPS:
            print(f'{s.check:32} {s.needs:9} {s.figures:20} {s.program} {" ".join(s.args)}')
        return 0
    if opts.gpus < 0 or opts.nodes < 1:
        print('paper_set.py: error: --gpus must be >= 0 and --nodes >= 1', file=sys.stderr)
        return 2
    for s in runnable(opts.gpus, opts.nodes):
        args = [*s.args, '--output', f'{opts.out}/{s.output}']
        print('\t'.join([s.check, str(ranks(s, opts.gpus, opts.nodes)), s.output, s.program,
                         shlex.join(args)]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
