"""Latency checks (issue 4): the pointer chase (`mempath chase`) and the compare-and-swap
ping-pong (`mempath pingpong`).

The measurement is the binary's (docs/cli.md); these checks launch it, keep the HDF5
file and turn the `MEMPATH chase ...` / `MEMPATH pingpong ...` summary lines
(docs/schema.md) into performance variables, in ns:

    MempathChase          tag acceptance, every partition: `chase --all --size 1GiB`, one
                          random chase per processor x memory with the path's default
                          allocator; `latency_ns_{pu}_{mem}` (median ns per load).
    MempathChaseSweep     tag full, every partition: `chase --all --alloc all --pattern
                          random,sequential`, the default size sweep (4 KiB .. max(1 GiB,
                          4 x the caches on the path)); `latency_ns_{pu}_{mem}_{alloc}_
                          {pattern}` at the largest size (every size stays in the file).
    MempathPingPong       tag acceptance, `+nvgpu`: `pingpong --alloc pinned`, every pair
                          of agents (CPU<->GPU among them) with the flag in pinned memory;
                          `rtt_ns_{a}_{b}_{mem}_{alloc}` (median round trip).
    MempathPingPongFull   tag full, `+nvgpu`: `pingpong`, every pair, memory, allocator.

All carry the tag `latency`; the ping-pong checks also `gpu` (pinned memory and GPU agents
need CUDA, so a node without an NVIDIA GPU does not run them). The acceptance checks are
subsets of the full ones (1 GiB is a size of the sweep) and are not tagged `full`.

Sanity (every check): exit code 0, at least one `status=ok` line, every summary line `ok`
or `skipped`, the HDF5 file written, and in its `/chase/cases` or `/pingpong/cases` table
every `ok` case `verified` (chase: the walk ended on the element the chain predicts;
ping-pong: both sides made every exchange and the flag ended at its start value) and as
many `ok` cases as `ok` lines.

Latency is lower-is-better: the references (references.py, LATENCY_REFERENCES) carry an
upper bound only.

Variables (`-S CHECK.NAME=VALUE`): pus, mems (the `--pu`, `--mem` filters; empty: all),
extra_options; chase: size (`--size`; MempathChase 1GiB, the sweep: empty = the binary's
sweep), reps; ping-pong: round_trips, warmup, timeout (size and reps do not apply).
"""
from __future__ import annotations

import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

import mempath_run
import mempath_summary
import references
from unified_memory import MempathGpuCommand

#: Statuses a summary line may have in a passing run (skipped: the node cannot run it).
PASSING_STATUSES = ('ok', 'skipped')


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def summary_pattern(bench: str) -> str:
    """The summary lines of `bench` on stdout; group 1: the key=value fields."""
    return rf'^MEMPATH {bench} (.*)$'


def summary_fields(bench: str, lines: list[str]) -> list[dict[str, str]]:
    """The key=value fields of every `MEMPATH <bench> ...` line among `lines`."""
    pattern = re.compile(summary_pattern(bench))
    return [mempath_summary.parse_fields(m[1])
            for m in map(pattern.match, (line.rstrip('\n') for line in lines)) if m]


@sn.deferrable
def statuses_pass(statuses: list[str], bench: str) -> bool:
    """Every summary line ok or skipped."""
    odd = sorted(set(statuses) - set(PASSING_STATUSES))
    if odd:
        raise SanityError(f'MEMPATH {bench} lines with status {", ".join(odd)} '
                          f'(only {" and ".join(PASSING_STATUSES)} pass)')
    return True


@sn.deferrable
def cases_verified(path: str, bench: str, ok_lines: int) -> bool:
    """Every `ok` row of `/{bench}/cases` in the HDF5 file has `verified` = 1, and there
    are as many `ok` rows as `ok` summary lines."""
    try:
        import h5py
    except ImportError as err:
        raise SanityError(f'h5py is needed to read {bench}/cases/verified '
                          f'(pip install -r requirements.txt): {err}') from None
    try:
        with h5py.File(path, 'r') as f:
            status = [_text(s) for s in f[f'{bench}/cases/status'][:]]
            verified = [int(v) for v in f[f'{bench}/cases/verified'][:]]
    except (OSError, KeyError) as err:
        raise SanityError(f'cannot read {bench}/cases from {os.path.basename(path)}: '
                          f'{err}') from None
    ok = [i for i, s in enumerate(status) if s == 'ok']
    unverified = [i for i in ok if i >= len(verified) or verified[i] != 1]
    if unverified:
        raise SanityError(f'{bench}/cases: case(s) {unverified[:10]} are ok but not '
                          f'verified')
    if len(ok) != ok_lines:
        raise SanityError(f'{os.path.basename(path)} holds {len(ok)} ok {bench} case(s), '
                          f'stdout {ok_lines} ok line(s)')
    return True


class MempathLatencyCommand(MempathGpuCommand):
    """`mempath chase|pingpong CASE_OPTIONS --output FILE ...`: sanity with the verified
    check, variables in ns, upper-bound references."""

    valid_systems = ['*']
    tags = {'latency'}
    #: Options that select the cases, right after the subcommand.
    case_options: list[str] = []
    #: `--pu` and `--mem` filters (comma lists); empty: every processor / memory.
    pus = variable(str, value='')
    mems = variable(str, value='')

    #: ReFrame references for the performance variables (references.py).
    resolve_references = staticmethod(references.resolve_latency)

    @staticmethod
    def perf_name(f: dict[str, str]) -> str:
        raise NotImplementedError

    def run_options(self) -> list[str]:
        """The subcommand's own sizing options (`--size`, `--reps`, `--round-trips`...)."""
        raise NotImplementedError

    @run_before('run')
    def set_command(self):   # replaces MempathGpuCommand.set_command
        self.keep_files = [self.output_file]
        self.executable = self.mempath.executable_path
        opts = [self.subcommand, *self.case_options]
        for flag, value in (('--pu', self.pus), ('--mem', self.mems)):
            if value:
                opts += [flag, value]
        self.executable_opts = [*opts, '--output', self.output_file, *self.run_options(),
                                *self.extra_options]

    @sanity_function
    def cases_ran(self):
        bench = self.subcommand
        return sn.all([
            mempath_run.ran_ok(self, bench, self.output_file),
            statuses_pass(sn.extractall(rf'^MEMPATH {bench} .*?\bstatus=(\S+)',
                                        self.stdout, 1), bench),
            cases_verified(os.path.join(self.stagedir, self.output_file), bench,
                           sn.count(sn.extractall(rf'^MEMPATH {bench} .*?\bstatus=ok\b',
                                                  self.stdout))),
        ])

    def perf_values(self, fields: list[dict[str, str]]) -> dict[str, tuple[float, str]]:
        """Variable name -> (median ns, 'ns') of the `ok` lines; where several lines give
        one name (a size sweep), the largest size."""
        values: dict[str, tuple[float, str]] = {}
        largest: dict[str, int] = {}
        for f in fields:
            if f.get('status') != 'ok' or not f.get('median_ns'):
                continue
            name, size = self.perf_name(f), int(f.get('size', 0))
            if size >= largest.get(name, -1):
                largest[name] = size
                values[name] = (float(f['median_ns']), 'ns')
        return values

    @run_before('performance')
    def set_perf_variables(self):   # replaces MempathGpuCommand's: dry runs and references
        if self.is_dry_run():       # nothing ran, nothing to read (`reframe --dry-run`)
            return
        stdout = os.path.join(self.stagedir, str(self.stdout))   # hooks run elsewhere
        lines = sn.evaluate(sn.extractall(summary_pattern(self.subcommand), stdout, 0))
        values = self.perf_values(summary_fields(self.subcommand, lines))
        self.perf_variables = {name: sn.make_performance_function(sn.defer(v), unit)
                               for name, (v, unit) in sorted(values.items())}
        self.reference = self.resolve_references(self.perf_variables)


class MempathChaseCommand(MempathLatencyCommand):
    subcommand = 'chase'

    def run_options(self) -> list[str]:
        opts = ['--size', self.size] if self.size else []
        return opts + (['--reps', str(self.reps)] if self.reps is not None else [])


@rfm.simple_test
class MempathChase(MempathChaseCommand):
    """One 1 GiB random chase per processor x memory, each path's default allocator."""

    output_file = 'chase.h5'
    descr = 'mempath chase --all: pointer-chase latency at 1 GiB of every path'
    tags = {'latency', 'acceptance'}
    time_limit = mempath_run.ACCEPTANCE_TIME_LIMIT
    case_options = ['--all']
    size = '1GiB'

    @staticmethod
    def perf_name(f):
        return f"latency_ns_{f['pu']}_{f['mem']}"


@rfm.simple_test
class MempathChaseSweep(MempathChaseCommand):
    """Every allocator, random and sequential chains, the whole size sweep."""

    output_file = 'chase_sweep.h5'
    descr = 'mempath chase --all --alloc all: latency by buffer size, every allocator'
    tags = {'latency', 'full'}
    time_limit = mempath_run.FULL_TIME_LIMIT
    case_options = ['--all', '--alloc', 'all', '--pattern', 'random,sequential']

    @staticmethod
    def perf_name(f):
        return f"latency_ns_{f['pu']}_{f['mem']}_{f['alloc']}_{f['pattern']}"


@rfm.simple_test
class MempathPingPong(MempathLatencyCommand):
    """Every pair of agents (CPU<->GPU among them) with the flag in pinned host memory."""

    subcommand = 'pingpong'
    output_file = 'pingpong.h5'
    descr = 'mempath pingpong --alloc pinned: CAS round trips, flag in pinned memory'
    valid_systems = ['+nvgpu']
    tags = {'latency', 'acceptance', 'gpu'}
    time_limit = mempath_run.ACCEPTANCE_TIME_LIMIT
    case_options = ['--alloc', 'pinned']
    #: `--round-trips`, `--warmup`, `--timeout` (seconds); None: the binary's (10000,
    #: 1000, 10).
    round_trips = variable(int, type(None), value=None)
    warmup = variable(int, type(None), value=None)
    timeout = variable(int, type(None), value=None)

    def run_options(self) -> list[str]:
        if self.size or self.reps is not None:
            raise ValueError('mempath pingpong has no --size or --reps: set round_trips, '
                             'warmup or timeout')
        opts = []
        for flag, value in (('--round-trips', self.round_trips), ('--warmup', self.warmup),
                            ('--stall-timeout', self.timeout)):
            if value is not None:
                opts += [flag, str(value)]
        return opts

    @staticmethod
    def perf_name(f):
        return f"rtt_ns_{f['a']}_{f['b']}_{f['mem']}_{f['alloc']}"


@rfm.simple_test
class MempathPingPongFull(MempathPingPong):
    """Every pair, every memory and every allocator that fits it."""

    output_file = 'pingpong_full.h5'
    descr = 'mempath pingpong: CAS round trips, every pair, memory and allocator'
    tags = {'latency', 'full', 'gpu'}
    time_limit = mempath_run.FULL_TIME_LIMIT
    case_options = []
