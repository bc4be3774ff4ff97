"""Latency checks (issue 4): the pointer chase and the compare-and-swap ping-pong.

    MempathChase          acceptance: `mempath chase --all --size 1GiB`, one large buffer
                          per processor x memory (each path's default allocator); perf
                          variables `latency_ns_{pu}_{mem}` (median ns per load).
    MempathChaseSweep     full: `--all --alloc all --pattern random,sequential`, the size
                          sweep; `latency_ns_{pu}_{mem}_{alloc}_{pattern}` at the largest size.
    MempathPingPong       acceptance (+nvgpu): `mempath pingpong --alloc pinned`;
                          `rtt_ns_{a}_{b}_{mem}_{alloc}` (median round trip).
    MempathPingPongFull   full (+nvgpu): every pair, every memory and allocator.

Latency is lower-is-better: references (references.py) carry an upper bound only.
Variables (`-S CHECK.NAME=VALUE`): size, reps, extra_options (see unified_memory.py).
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import run_before

import references
from unified_memory import MempathGpuCommand


class MempathLatencyCommand(MempathGpuCommand):
    valid_systems = ['*']
    tags = {'latency'}
    #: Options that select the cases (before size/reps/extra_options).
    case_options: list[str] = []

    @staticmethod
    def perf_name(f: dict[str, str]) -> str:
        raise NotImplementedError

    def perf_values(self, fields):
        values: dict[str, tuple[float, str]] = {}
        largest: dict[str, int] = {}
        for f in fields:
            if f.get('status') != 'ok':
                continue
            name, size = self.perf_name(f), int(f.get('size', 0))
            if size >= largest.get(name, -1):  # a sweep reports its largest size
                largest[name] = size
                values[name] = (float(f['median_ns']), 'ns')
        return values

    @run_before('run', always_last=True)
    def add_case_options(self):
        self.executable_opts[1:1] = list(self.case_options)  # after the subcommand

    @run_before('performance', always_last=True)
    def set_reference(self):
        self.reference = references.resolve_latency(self.perf_variables)


@rfm.simple_test
class MempathChase(MempathLatencyCommand):
    """One 1 GiB random chase per processor x memory."""

    subcommand = 'chase'
    output_file = 'chase.h5'
    descr = 'pointer-chase latency, 1 GiB per path'
    tags = {'latency', 'acceptance'}
    case_options = ['--all']
    size = '1GiB'

    @staticmethod
    def perf_name(f):
        return f"latency_ns_{f['pu']}_{f['mem']}"


@rfm.simple_test
class MempathChaseSweep(MempathLatencyCommand):
    """Every allocator, random and sequential chains, the whole size sweep."""

    subcommand = 'chase'
    output_file = 'chase_sweep.h5'
    descr = 'pointer-chase latency by buffer size, every allocator'
    tags = {'latency', 'full'}
    case_options = ['--all', '--alloc', 'all', '--pattern', 'random,sequential']

    @staticmethod
    def perf_name(f):
        return f"latency_ns_{f['pu']}_{f['mem']}_{f['alloc']}_{f['pattern']}"


@rfm.simple_test
class MempathPingPong(MempathLatencyCommand):
    """CPU<->GPU (and every other pair) with the flag in pinned host memory."""

    subcommand = 'pingpong'
    output_file = 'pingpong.h5'
    descr = 'CAS ping-pong round trips, flag in pinned memory'
    valid_systems = ['+nvgpu']
    tags = {'latency', 'acceptance', 'gpu'}
    case_options = ['--alloc', 'pinned']

    @staticmethod
    def perf_name(f):
        return f"rtt_ns_{f['a']}_{f['b']}_{f['mem']}_{f['alloc']}"


@rfm.simple_test
class MempathPingPongFull(MempathPingPong):
    """Every pair, every memory and allocator."""

    output_file = 'pingpong_full.h5'
    descr = 'CAS ping-pong round trips, every pair and memory'
    tags = {'latency', 'full', 'gpu'}
    case_options = []
