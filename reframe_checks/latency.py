"""Latency checks: the pointer chase (`mempath chase`) and the compare-and-swap
ping-pong (`mempath pingpong`).

The measurement is the binary's (docs/cli.md); these checks launch it, keep the HDF5
file and turn the `MEMPATH chase ...` / `MEMPATH pingpong ...` summary lines
(docs/schema.md) into performance variables:

    MempathChase          tag acceptance, every `remote` partition: `chase --all --size 1GiB
                          --mem local-host,local-hbm,peer-host,peer-hbm`, one random
                          chase per processor x memory role with the path's default
                          allocator.
    MempathChaseSweep     tag full, one check per allocator (`%alloc=`; CUDA allocators
                          on `+nvgpu`): `chase --all --pattern random,sequential --alloc
                          ALLOC`, the default size sweep (4 KiB .. max(1 GiB, 4 x the
                          caches on the path)), variables at the largest size.
    MempathPingPong       tag acceptance, `+nvgpu`: `pingpong --alloc pinned`, every pair
                          of agents (CPU<->GPU among them) with the flag in pinned memory.
    MempathPingPongFull   tag full, `+nvgpu`, one check per allocator: `pingpong --alloc
                          ALLOC`, every pair and memory.
    MempathAtomics        tags atomics, full, gpu, `+nvgpu`: `atomics --all`, each GPU's
                          fetch-and-add throughput on counters in every memory and
                          allocator (no reference yet, and none of the latency bounds).

Variables, one per class of path (mempath_summary.ClassMetric), the worst member of each:
`latency_ns_{pu_kind}_{mem_kind}_{via}_{alloc}_{pattern}_max` (chase: the slowest GPU /
socket, median ns per load), `rtt_ns_{a_kind}_{b_kind}_{mem_kind}_{via}_{alloc}_max`
(ping-pong: median round trip; `via`, the links of both agents' paths to the flag) and
`atomics_Mops_{pu_kind}_{mem_kind}_{via}_{alloc}_{scope}_min` (median Mop/s). Every path
and size stays in the HDF5 file.

All but MempathAtomics (a throughput) carry the tag `latency`; the ping-pong checks also `gpu` (pinned memory and GPU agents
need CUDA, so a node without an NVIDIA GPU does not run them). The acceptance checks are
subsets of the full ones (1 GiB is a size of the sweep) and are not tagged `full`.

Sanity (every check, mempath_run.ran_ok with `verified`): exit code 0, at least one
`status=ok` line, every summary line `ok` or `skipped`, the HDF5 file written, and every
`ok` line `verified=1`, printed from the row of its `/chase/cases`, `/pingpong/cases` or
`/atomics/cases` table (chase: the walk ended on the element the chain predicts;
ping-pong: both sides made every exchange and the flag ended at its start value; atomics:
every counter holds exactly the increments it received). No HDF5 is read in ReFrame.

Latency is lower-is-better: the references (references.py, LATENCY_REFERENCES) carry an
upper bound only.

Variables (`-S CHECK.NAME=VALUE`): pus, mems (the `--pu`, `--mem` filters; empty: all),
extra_options; chase: size (`--size`; MempathChase 1GiB, the sweep: empty = the binary's
sweep), reps; ping-pong: round_trips, warmup, timeout (size and reps do not apply).
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import parameter, variable

import mempath_run
import references
from mempath_run import ACCEPTANCE_TIME_LIMIT, FULL_TIME_LIMIT
from mempath_summary import ClassMetric, Metric

#: Options every processor x memory check of this family and of applications.py takes.
PATH_FLAGS = (('--pu', 'pus'), ('--mem', 'mems'))


class MempathVerifiedCommand(mempath_run.MempathCommand, mempath_run.WholeNode):
    """A mempath run whose cases check their own results: sanity also asks every line ok
    or skipped and every ok line `verified=1` (from stdout; no HDF5 read in ReFrame)."""

    verified = True
    #: `--pu` and `--mem` filters (comma lists); empty: every processor / memory.
    pus = variable(str, value='')
    mems = variable(str, value='')
    #: Bytes per buffer (`--size`); empty: the binary's default.
    size = variable(str, value='')
    #: Repetitions (`--reps`); None: the binary's default.
    reps = variable(int, type(None), value=None)
    flags = PATH_FLAGS + (('--size', 'size'), ('--reps', 'reps'))
    valid_systems = mempath_run.CPU_NODES


class MempathLatencyCommand(MempathVerifiedCommand):
    """Variables in ns, upper-bound references."""

    resolve_references = staticmethod(references.resolve_latency)


class MempathPingPongCommand(MempathLatencyCommand):
    """`mempath pingpong`: round trips instead of sizes."""

    subcommand = 'pingpong'
    valid_systems = mempath_run.GPU_NODES
    #: `--round-trips`, `--warmup`, `--stall-timeout` (seconds); None: the binary's
    #: (10000, 1000, 10).
    round_trips = variable(int, type(None), value=None)
    warmup = variable(int, type(None), value=None)
    timeout = variable(int, type(None), value=None)
    flags = PATH_FLAGS + (('--round-trips', 'round_trips'), ('--warmup', 'warmup'),
                          ('--stall-timeout', 'timeout'))
    metric = ClassMetric(Metric('{a}_{b}_{mem}_{alloc}', 'median_ns', 'ns'),
                         'rtt_ns_{a_kind}_{b_kind}_{mem_kind}_{via}_{alloc}', 'max')

    def command(self) -> list[str]:
        if self.size or self.reps is not None:
            raise ValueError('mempath pingpong has no --size or --reps: set round_trips, '
                             'warmup or timeout')
        return super().command()


#: A chase's path at its largest size; its class reports the slowest path.
CHASE_METRIC = ClassMetric(Metric('{pu}_{mem}_{alloc}_{pattern}', 'median_ns', 'ns'),
                           'latency_ns_{pu_kind}_{mem_kind}_{via}_{alloc}_{pattern}', 'max')

@rfm.simple_test
class MempathChase(MempathLatencyCommand):
    descr = 'mempath chase --all: pointer-chase latency at 1 GiB of every path'
    tags = {'latency', 'acceptance'}
    time_limit = ACCEPTANCE_TIME_LIMIT
    output_file = 'chase.h5'
    case_options = ['--all']
    subcommand = 'chase'
    size = '1GiB'
    mems = mempath_run.MEMORY_ROLES
    metric = CHASE_METRIC


@rfm.simple_test
class MempathAtomics(MempathLatencyCommand):
    descr = 'mempath atomics --all: GPU fetch-and-add throughput, counters in every memory'
    tags = {'atomics', 'full', 'gpu'}
    time_limit = FULL_TIME_LIMIT
    output_file = 'atomics.h5'
    case_options = ['--all']
    subcommand = 'atomics'
    valid_systems = mempath_run.GPU_NODES
    metric = ClassMetric(Metric('{pu}_{mem}_{alloc}_{scope}', 'median_Mops', 'Mop/s', keep=''),
                         'atomics_Mops_{pu_kind}_{mem_kind}_{via}_{alloc}_{scope}')


@rfm.simple_test
class MempathPingPong(MempathPingPongCommand):
    descr = 'mempath pingpong --alloc pinned: CAS round trips, flag in pinned memory'
    tags = {'latency', 'acceptance', 'gpu'}
    time_limit = ACCEPTANCE_TIME_LIMIT
    output_file = 'pingpong.h5'
    case_options = ['--alloc', 'pinned']


# The full sweeps, one check per allocator (mempath_run.PerAllocator): every allocator at
# once would give ~70 (chase) and ~40 (ping-pong) classes on a quad GH200.
@rfm.simple_test
class MempathChaseSweep(MempathLatencyCommand, mempath_run.PerAllocator):
    descr = 'mempath chase --all: latency by buffer size, one allocator'
    tags = {'latency', 'full'}
    time_limit = FULL_TIME_LIMIT
    output_file = 'chase_sweep.h5'
    case_options = ['--all', '--pattern', 'random,sequential']
    subcommand = 'chase'
    metric = CHASE_METRIC
    mems = mempath_run.MEMORY_ROLES
    alloc = parameter(mempath_run.ALLOCATORS)


@rfm.simple_test
class MempathPingPongFull(MempathPingPongCommand, mempath_run.PerAllocator):
    descr = 'mempath pingpong: CAS round trips, every pair and memory, one allocator'
    tags = {'latency', 'full', 'gpu'}
    time_limit = FULL_TIME_LIMIT
    output_file = 'pingpong_full.h5'
    # mempath pingpong's allocators (core/pingpong_plan.hpp).
    alloc = parameter(['numa', 'pinned', 'managed', 'device'])
