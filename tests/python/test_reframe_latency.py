"""ReFrame latency and scale-out checks: their performance variables, one per class of path
(latency.CHASE_METRIC, the ping-pong and atomics metrics), from real summary lines (H100
and two H200, 2026-11-22, with the `via=` field the binary now prints) and from the
docs/schema.md lines, their references (keyed by class name), where they are listed
(per allocator: `MempathChaseSweep %alloc=...`, `MempathPingPongFull %alloc=...`) and
with which tags, their command lines (`reframe --dry-run`), the number of variables they
report on a quad GH200 (tests/fixtures/gh200_quad), and the latency checks run by ReFrame
with a stand-in `mempath`: variables, kept HDF5 file, sanity failures (failed,
unverified, missing cases) and the upper-bound references."""
from __future__ import annotations

import fnmatch
import json
import re
import shlex
from pathlib import Path

import pytest

from conftest import planned_summary_lines
from test_reframe import (CHECKS, CONFIGS, generic_has_gpu, generic_variant, gh200_variant,
                          listed, reframe)

REPO = Path(__file__).resolve().parents[2]

import latency  # noqa: E402
import mempath_run  # noqa: E402
import mempath_summary  # noqa: E402
import references  # noqa: E402
import scaleout  # noqa: E402

QUAD_GH200 = REPO / "tests" / "fixtures" / "gh200_quad"

CHASE_LINES = [
    'pu=gpu0 cpu=-1 mem=gpu0 alloc=device via=local pattern=random size=33554432 line=64 locality=33554432 huge=0 status=ok median_ns=250.95 min_ns=239.96 median_cycles=496.8',
    'pu=gpu0 cpu=-1 mem=gpu0 alloc=device via=local pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=ok median_ns=347.04 min_ns=346.44 median_cycles=687.1',
    'pu=cpu0 cpu=0 mem=numa0 alloc=numa via=local pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=ok median_ns=198.87 min_ns=193.61',
    'pu=gpu0 cpu=-1 mem=numa0 alloc=numa via=pcie pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
]
PINGPONG_LINES = [
    'a=cpu0 b=gpu0 a_cpu=0 b_cpu=-1 mem=numa0 alloc=pinned via=pcie status=ok median_ns=3039.3 mean_ns=3114.6 p99_ns=4080.4 round_trips=10000',
    'a=cpu0 b=cpu0 a_cpu=0 b_cpu=1 mem=gpu0 alloc=device via=pcie status=skipped reason="cudaMalloc memory is not mapped for CPU access"',
    'a=gpu0 b=gpu0 a_cpu=-1 b_cpu=-1 mem=numa0 alloc=pinned via=pcie status=failed reason="timed out"',
]
NCCL_LINES = [
    'coll=allreduce placement=device ranks=2 nodes=1 size=536870912 status=ok time_us=1697.03 algbw_GBps=316.36 busbw_GBps=316.36',
    'coll=allreduce placement=device ranks=2 nodes=1 size=1073741824 status=ok time_us=3249.55 algbw_GBps=330.43 busbw_GBps=330.43',
    'coll=allgather placement=host ranks=2 nodes=1 size=1073741824 status=ok time_us=23810.66 algbw_GBps=45.10 busbw_GBps=22.55',
]

#: The allocators of the per-allocator checks (their `alloc` parameter), and those that
#: need CUDA (their checks run on `+nvgpu` partitions only).
CHASE_SWEEP_ALLOCS = ('system', 'numa', 'pinned', 'registered', 'managed', 'device')
PINGPONG_FULL_ALLOCS = ('numa', 'pinned', 'managed', 'device')
CUDA_ALLOCS = ('pinned', 'registered', 'managed', 'device')
ALLOCS = '(?P<alloc>system|numa|pinned|registered|managed|device)'
VIA = '(?P<via>[a-z0-9_]+?)'
#: The class names of the three families (latency.py's module docstring).
CHASE_CLASS_RE = re.compile(
    rf'latency_ns_(?P<pu>cpu|gpu)_(?P<mem>numa|gpu)_{VIA}_{ALLOCS}_(?P<pattern>random|sequential)_max')
RTT_CLASS_RE = re.compile(rf'rtt_ns_(?P<a>cpu|gpu)_(?P<b>cpu|gpu)_(?P<mem>numa|gpu)_{VIA}_{ALLOCS}_max')
ATOMICS_CLASS_RE = re.compile(
    rf'atomics_Mops_(?P<pu>gpu)_(?P<mem>numa|gpu)_{VIA}_{ALLOCS}_(?P<scope>device|system)_min')


def summary(bench: str, lines: list[str]) -> list[mempath_summary.SummaryLine]:
    """`lines` (the fields of summary lines) as the one parser reads `MEMPATH bench ...`."""
    return mempath_summary.parse_lines(f'MEMPATH {bench} {line}' for line in lines)


def test_chase_class_reports_its_slowest_path_at_the_largest_size() -> None:
    assert latency.MempathChase.metric is latency.CHASE_METRIC
    values = latency.MempathChase.metric.values(summary('chase', CHASE_LINES))
    assert values == {"latency_ns_gpu_gpu_local_device_random_max": (347.04, "ns"),
                      "latency_ns_cpu_numa_local_numa_random_max": (198.87, "ns")}
    # A second GPU of the class: the class reports the slower of the two at 1 GiB.
    slower = CHASE_LINES[1].replace('gpu0', 'gpu1').replace('median_ns=347.04', 'median_ns=361.5')
    values = latency.CHASE_METRIC.values(summary('chase', [*CHASE_LINES, slower]))
    assert values["latency_ns_gpu_gpu_local_device_random_max"] == (361.5, "ns")


def test_sweep_classes_name_links_allocator_and_pattern() -> None:
    assert latency.MempathChaseSweep.metric is latency.CHASE_METRIC
    lines = [*CHASE_LINES,
             CHASE_LINES[2].replace('alloc=numa', 'alloc=pinned').replace('198.87', '201.5'),
             CHASE_LINES[2].replace('pattern=random', 'pattern=sequential')
             .replace('198.87', '8.25')]
    values = latency.MempathChaseSweep.metric.values(summary('chase', lines))
    assert values == {"latency_ns_gpu_gpu_local_device_random_max": (347.04, "ns"),
                      "latency_ns_cpu_numa_local_numa_random_max": (198.87, "ns"),
                      "latency_ns_cpu_numa_local_pinned_random_max": (201.5, "ns"),
                      "latency_ns_cpu_numa_local_numa_sequential_max": (8.25, "ns")}
    for name in values:
        assert CHASE_CLASS_RE.fullmatch(name), name


def test_pingpong_classes_skip_what_did_not_run() -> None:
    values = latency.MempathPingPong.metric.values(summary('pingpong', PINGPONG_LINES))
    assert values == {"rtt_ns_cpu_gpu_numa_pcie_pinned_max": (3039.3, "ns")}
    assert latency.MempathPingPongFull.metric is latency.MempathPingPong.metric


def test_pingpong_class_reports_its_slowest_pair() -> None:
    line = ('a={a} b={b} a_cpu=0 b_cpu=-1 mem={mem} alloc=pinned via={via} status=ok '
            'median_ns={ns} mean_ns=1 p99_ns=2 round_trips=10000')
    lines = [line.format(a='cpu0', b='gpu0', mem='numa0', via='c2c', ns=1890.3),
             line.format(a='cpu1', b='gpu1', mem='numa1', via='c2c', ns=2011.7),
             line.format(a='cpu0', b='gpu1', mem='numa0', via='interconnect+c2c', ns=2900.0),
             line.format(a='cpu0', b='cpu1', mem='numa1', via='interconnect', ns=900.0),
             line.format(a='cpu1', b='cpu0', mem='numa0', via='interconnect', ns=870.0)]
    values = latency.MempathPingPong.metric.values(summary('pingpong', lines))
    assert values == {'rtt_ns_cpu_gpu_numa_c2c_pinned_max': (2011.7, 'ns'),
                      'rtt_ns_cpu_gpu_numa_interconnect_c2c_pinned_max': (2900.0, 'ns'),
                      'rtt_ns_cpu_cpu_numa_interconnect_pinned_max': (900.0, 'ns')}
    for name in values:
        assert RTT_CLASS_RE.fullmatch(name), name


def test_atomics_class_reports_its_slowest_gpu() -> None:
    line = ('pu={pu} mem={mem} alloc={alloc} via={via} scope=device counters=8448 status=ok '
            'median_Mops={mops} host_native_atomics=0')
    lines = [line.format(pu='gpu0', mem='numa0', alloc='pinned', via='c2c', mops=812.44),
             line.format(pu='gpu1', mem='numa1', alloc='pinned', via='c2c', mops=790.1),
             line.format(pu='gpu0', mem='gpu0', alloc='device', via='local', mops=5400.0),
             line.format(pu='gpu0', mem='gpu1', alloc='device', via='nvlink', mops=1200.5),
             line.format(pu='gpu1', mem='gpu0', alloc='device', via='nvlink', mops=1300.0),
             line.format(pu='gpu1', mem='numa0', alloc='pinned', via='c2c+interconnect',
                         mops=300.0).replace('status=ok', 'status=skipped')]
    values = latency.MempathAtomics.metric.values(summary('atomics', lines))
    assert values == {'atomics_Mops_gpu_numa_c2c_pinned_device_min': (790.1, 'Mop/s'),
                      'atomics_Mops_gpu_gpu_local_device_device_min': (5400.0, 'Mop/s'),
                      'atomics_Mops_gpu_gpu_nvlink_device_device_min': (1200.5, 'Mop/s')}
    for name in values:
        assert ATOMICS_CLASS_RE.fullmatch(name), name


def test_latency_references_are_upper_bounds_on_gh200_only() -> None:
    refs = references.resolve_latency(["latency_ns_gpu_gpu_local_device_random_max",
                                       "latency_ns_cpu_numa_local_numa_random_max",
                                       "latency_ns_cpu_numa_interconnect_numa_random_max"])
    assert set(refs) == {references.GH200}
    ref = refs[references.GH200]["latency_ns_gpu_gpu_local_device_random_max"]
    assert ref[0] == 344 and ref[1] is None and ref[2] > 0 and ref[3] == "ns"
    assert refs[references.GH200]["latency_ns_cpu_numa_local_numa_random_max"][0] == 170
    # Another superchip's memory: no published seed.
    assert "latency_ns_cpu_numa_interconnect_numa_random_max" not in refs[references.GH200]
    assert not references.resolve_latency(["x"])
    # Per-path names are gone: they resolve to nothing.
    assert references.resolve_latency(["latency_ns_gpu0_gpu0", "latency_ns_cpu1_numa1"]) == {}


def test_nccl_variables_at_the_largest_size() -> None:
    values = scaleout.MempathNccl.metric.values(summary('nccl', NCCL_LINES))
    assert values == {"allreduce_device_busbw": (330.43, "GB/s"),
                      "allgather_host_busbw": (22.55, "GB/s")}


def test_nccl_tests_reference_for_two_alps_nodes() -> None:
    assert references.resolve_nccl(2, 4) == {references.GH200: {"busbw": (150.0, -0.2, None, "GB/s")}}
    assert references.resolve_nccl(1, 2) == {}


@pytest.mark.parametrize("text,busbw", [(
    "  1073741824     268435456     float     sum      -1   3282.55  327.11  327.11       0   3268.95  328.47  328.47       0\n",
    327.11)])
def test_nccl_tests_row_pattern_reads_out_of_place_busbw(text: str, busbw: float) -> None:
    m = re.search(scaleout.NCCL_TESTS_ROW, text, re.MULTILINE)
    assert m and int(m[1]) == 1 << 30 and float(m[2]) == busbw


def sweep(alloc: str) -> str:
    return f'MempathChaseSweep %alloc={alloc}'


def pingpong_full(alloc: str) -> str:
    return f'MempathPingPongFull %alloc={alloc}'


def test_where_the_checks_are_listed() -> None:
    alps = set(listed("alps.py", "--system", "daint:normal"))
    assert {"MempathChase", "MempathPingPong", "MempathAtomics"} <= alps
    assert {sweep(a) for a in CHASE_SWEEP_ALLOCS} <= alps
    assert {pingpong_full(a) for a in PINGPONG_FULL_ALLOCS} <= alps
    assert not {"MempathChaseSweep", "MempathPingPongFull"} & alps   # only per allocator
    ci = set(listed("ci.py", "--system", "ci"))
    assert {"MempathChase", "MempathInventory", sweep('system'), sweep('numa')} <= ci
    assert "MempathPingPong" not in ci
    # No GPUs on the CI nodes: no allocator that needs CUDA, no ping-pong at all.
    assert not {sweep(a) for a in CUDA_ALLOCS} & ci
    assert not {n for n in ci if n.startswith("MempathPingPongFull")}
    assert any(name.startswith("MempathMpiBandwidth") for name in ci)
    assert not {"MempathNccl", "NcclTestsAllReduce"} & ci  # no GPUs on the CI nodes


# ---- the checks of latency.py: summary lines of docs/schema.md, tags, commands, sanity ----
#
# Everything below runs without a GPU: listings on a copy of generic.py that claims one,
# command lines from `reframe --dry-run`, and the checks run by ReFrame with a stand-in
# `mempath` (a script printing given summary lines and copying a given HDF5 file).

LATENCY_CHECKS = {  # name -> tags
    'MempathChase': {'latency', 'acceptance'},
    **{sweep(a): {'latency', 'full'} for a in CHASE_SWEEP_ALLOCS},
    'MempathPingPong': {'latency', 'acceptance', 'gpu'},
    **{pingpong_full(a): {'latency', 'full', 'gpu'} for a in PINGPONG_FULL_ALLOCS},
    'MempathAtomics': {'atomics', 'full', 'gpu'},
}
#: Listed on `+nvgpu` partitions only: the ping-pong and atomics checks (CUDA agents) and
#: the chase sweeps of an allocator that needs CUDA.
GPU_ONLY = {'MempathPingPong', 'MempathAtomics', *(pingpong_full(a) for a in PINGPONG_FULL_ALLOCS),
            *(sweep(a) for a in CUDA_ALLOCS)}

SCHEMA_CHASE = [  # docs/schema.md, "/chase/...", with the `via=` the binary prints after alloc
    'MEMPATH chase pu=cpu0 cpu=0 mem=numa0 alloc=numa via=local pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=ok median_ns=98.41 min_ns=97.90',
    'MEMPATH chase pu=gpu0 cpu=-1 mem=gpu0 alloc=device via=local pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=ok median_ns=402.13 min_ns=401.77 median_cycles=792.4',
]
SCHEMA_PINGPONG = [  # docs/schema.md, "/pingpong/...", with `via=` (GH200: C2C)
    'MEMPATH pingpong a=cpu0 b=gpu0 a_cpu=0 b_cpu=-1 mem=numa0 alloc=pinned via=c2c status=ok median_ns=1890.3 mean_ns=1902.6 p99_ns=2210.8 round_trips=10000',
]


def chase_line(pu='cpu0', mem='numa0', alloc='numa', pattern='random', size=1 << 30,
               status='ok', ns=98.41, via='local') -> str:
    cpu = pu[3:] if pu.startswith('cpu') else '-1'
    line = (f'MEMPATH chase pu={pu} cpu={cpu} mem={mem} alloc={alloc} via={via} '
            f'pattern={pattern} size={size} line=64 locality={size} huge=0 status={status}')
    if status == 'ok':
        return line + f' median_ns={ns} min_ns={ns - 0.5}'
    return line + ' reason="the walk did not end on the element the chain predicts"'


def pingpong_line(a='cpu0', b='gpu0', mem='numa0', alloc='pinned', status='ok',
                  ns=1890.3, via='c2c') -> str:
    line = (f'MEMPATH pingpong a={a} b={b} a_cpu={a[3:] if a.startswith("cpu") else -1} '
            f'b_cpu=-1 mem={mem} alloc={alloc} via={via} status={status}')
    if status == 'ok':
        return line + f' median_ns={ns} mean_ns={ns + 12} p99_ns={ns * 1.2} round_trips=10000'
    return line + ' reason="timed out: a partner waited over 10.000000 s"'


def test_schema_lines_become_class_variables_in_ns() -> None:
    chase = mempath_summary.parse_lines(SCHEMA_CHASE + ['mempath: 2 cases written'], 'chase')
    expected = {'latency_ns_cpu_numa_local_numa_random_max': (98.41, 'ns'),
                'latency_ns_gpu_gpu_local_device_random_max': (402.13, 'ns')}
    assert latency.MempathChase.metric.values(chase) == expected
    assert latency.MempathChaseSweep.metric.values(chase) == expected
    pingpong = mempath_summary.parse_lines(SCHEMA_PINGPONG + SCHEMA_CHASE, 'pingpong')
    assert latency.MempathPingPong.metric.values(pingpong) == {
        'rtt_ns_cpu_gpu_numa_c2c_pinned_max': (1890.3, 'ns')}
    # A line without `via` (an older binary's) still counts, in an `unknown` class.
    old = mempath_summary.parse_lines([SCHEMA_CHASE[0].replace(' via=local', '')], 'chase')
    assert latency.CHASE_METRIC.values(old) == {
        'latency_ns_cpu_numa_unknown_numa_random_max': (98.41, 'ns')}


def test_sweep_class_keeps_each_paths_largest_size_then_its_slowest_path() -> None:
    lines = [chase_line(size=4096, ns=1.2), chase_line(size=1 << 30, ns=190.5),
             chase_line(size=1 << 20, ns=20.0), chase_line(pattern='sequential', ns=7.5),
             chase_line(pu='cpu1', mem='numa1', size=1 << 30, ns=210.0),
             chase_line(pu='cpu1', mem='numa1', size=1 << 20, ns=999.0),  # smaller: not kept
             chase_line(pu='cpu0', mem='numa1', via='interconnect', ns=300.0),
             chase_line(alloc='system', size=1 << 30, status='failed'),
             chase_line(alloc='pinned', size=1 << 29, ns=180.0)]
    values = latency.MempathChaseSweep.metric.values(mempath_summary.parse_lines(lines, 'chase'))
    assert values == {'latency_ns_cpu_numa_local_numa_random_max': (210.0, 'ns'),
                      'latency_ns_cpu_numa_local_numa_sequential_max': (7.5, 'ns'),
                      'latency_ns_cpu_numa_interconnect_numa_random_max': (300.0, 'ns'),
                      'latency_ns_cpu_numa_local_pinned_random_max': (180.0, 'ns')}


#: references._gh200_latency, by class (the slowest GPU / socket of a random chase).
GH200_LATENCY = {
    'latency_ns_gpu_gpu_local_device_random_max': references.GH200_HOPPER_HBM_NS,
    'latency_ns_gpu_numa_local_numa_random_max': references.GH200_HOPPER_HBM_NS,
    'latency_ns_cpu_numa_local_numa_random_max': references.GH200_GRACE_LPDDR_NS,
    'latency_ns_cpu_numa_c2c_numa_random_max': references.GH200_GRACE_HBM_NS,
    **{f'latency_ns_gpu_numa_c2c_{alloc}_random_max': references.GH200_HOPPER_LPDDR_NS
       for alloc in ('system', 'numa', 'pinned', 'registered')},
}


def test_latency_references_share_the_one_resolver() -> None:
    names = ['latency_ns_gpu_gpu_nvlink_device_random_max', 'latency_ns_cpu_numa_c2c_numa_random_max',
             'latency_ns_gpu_numa_c2c_pinned_random_max', 'latency_ns_gpu_gpu_local_device_random_max',
             'latency_ns_gpu_numa_c2c_pinned_sequential_max', 'latency_ns_gpu_numa_c2c_managed_random_max',
             'rtt_ns_cpu_gpu_numa_c2c_pinned_max']
    assert references.resolve_latency(names) == references.resolve_in(
        references.LATENCY_REFERENCES, names)
    table = references.resolve_latency(names)[references.GH200]
    assert table == {'latency_ns_cpu_numa_c2c_numa_random_max': references.GH200_GRACE_HBM_NS,
                     'latency_ns_gpu_numa_c2c_pinned_random_max': references.GH200_HOPPER_LPDDR_NS,
                     'latency_ns_gpu_gpu_local_device_random_max': references.GH200_HOPPER_HBM_NS}
    assert references.LATENCY_REFERENCES[references.GH200] == references._gh200_latency() \
        == GH200_LATENCY
    for name, (value, lower, upper, unit) in references.LATENCY_REFERENCES[references.GH200].items():
        m = CHASE_CLASS_RE.fullmatch(name)
        assert m and m['pattern'] == 'random', name
        assert lower is None and upper == references.LATENCY_SEED_SLACK and unit == 'ns'
    # The published figures (Fusco et al. 2024), each the reference of its upper bound.
    assert [ref[0] for ref in (references.GH200_HOPPER_HBM_NS, references.GH200_HOPPER_LPDDR_NS,
                               references.GH200_GRACE_LPDDR_NS, references.GH200_GRACE_HBM_NS)] \
        == [344, 818, 170, 800]


def test_latency_references_are_upper_bounds() -> None:
    from reframe.core.exceptions import SanityError
    from reframe.utility import sanity as sn

    value, lower, upper, _ = references.GH200_HOPPER_HBM_NS
    for inside in (1.0, 300.0, 344.0, 344 * 1.24):   # any latency below the bound passes
        assert sn.evaluate(sn.assert_reference(inside, value, lower, upper))
    with pytest.raises(SanityError):
        sn.evaluate(sn.assert_reference(344 * 1.3, value, lower, upper))


# ---- a quad GH200 (tests/fixtures/gh200_quad): a few classes per check ---------------------

#: (check, its metric's family pattern, the `mempath` arguments its command runs, the one
#: allocator every class names or None).
QUAD_GH200_CHECKS = [
    ('MempathChase', CHASE_CLASS_RE, ('chase', '--all', '--size', '1GiB'), None),
    ('MempathPingPong', RTT_CLASS_RE, ('pingpong', '--alloc', 'pinned'), 'pinned'),
    *((sweep(a), CHASE_CLASS_RE,
       ('chase', '--all', '--pattern', 'random,sequential', '--alloc', a), a)
      for a in CHASE_SWEEP_ALLOCS),
    *((pingpong_full(a), RTT_CLASS_RE, ('pingpong', '--alloc', a), a)
      for a in PINGPONG_FULL_ALLOCS),
    ('MempathAtomics', ATOMICS_CLASS_RE, ('atomics', '--all'), None),
]


def check_metric(name: str):
    """The metric object of a check of latency.py, by its listed name."""
    return getattr(latency, name.split(' %')[0]).metric


def quad_gh200_values(binary: Path, args: tuple[str, ...], metric) -> tuple[list, dict]:
    """The summary lines a quad GH200 would print for `mempath ARGS` (their plan, made-up
    figures) and the variables `metric` makes of them."""
    lines = mempath_summary.parse_lines(planned_summary_lines(binary, QUAD_GH200, *args))
    return lines, metric.values(lines)


@pytest.mark.parametrize('name, pattern, args, alloc', QUAD_GH200_CHECKS,
                         ids=[c[0].replace(' %alloc=', '-') for c in QUAD_GH200_CHECKS])
def test_a_quad_gh200_latency_check_reports_a_few_classes(mempath_cpu_bin: Path, name: str,
                                                          pattern, args, alloc) -> None:
    lines, values = quad_gh200_values(mempath_cpu_bin, args, check_metric(name))
    ok = [s for s in lines if s.status == 'ok']
    assert 1 <= len(values) <= mempath_summary.MAX_PERF_VARS, sorted(values)
    assert len(values) < len(ok), f'{len(ok)} paths, {len(values)} classes'
    for var in values:
        m = pattern.fullmatch(var)
        assert m, var
        assert alloc is None or m['alloc'] == alloc, var
    # Each class reports the worst of its paths (every path at its one planned size).
    metric = check_metric(name)
    worst = max if metric.worst == 'max' else min
    for var, (value, _) in values.items():
        members = [s.number(metric.path.field) for s in ok if var == '{}_{}'.format(
            metric.name.format(**mempath_summary.class_fields(s.fields)), metric.worst)]
        assert members and value == worst(members), var


def test_gh200_latency_references_name_real_quad_gh200_classes(mempath_cpu_bin: Path) -> None:
    names = set()
    for name, _, args, _ in QUAD_GH200_CHECKS:
        if name == 'MempathChase' or name.startswith('MempathChaseSweep'):
            names |= set(quad_gh200_values(mempath_cpu_bin, args, check_metric(name))[1])
    assert references._gh200_latency()
    for pattern in references._gh200_latency():
        assert fnmatch.filter(names, pattern), f'{pattern} names no quad-GH200 class'


# ---- listings and tags ---------------------------------------------------------------------

@pytest.fixture
def gh200_config(tmp_path: Path) -> Path:
    return gh200_variant(tmp_path / 'gh200.py')


@pytest.fixture
def gpu_config(tmp_path: Path) -> Path:
    """generic.py with the features of a GPU partition, whatever this host has."""
    return generic_variant(tmp_path / 'generic_gpu.py', ['gpu', 'nvgpu'])


@pytest.fixture
def cpu_config(tmp_path: Path) -> Path:
    """generic.py as a CPU-only partition, whatever this host has."""
    return generic_variant(tmp_path / 'generic_cpu.py', [])


def latency_checks(names: list[str]) -> set[str]:
    return {n for n in names if n in LATENCY_CHECKS}


def test_cuda_allocators_are_the_ones_that_need_a_gpu_partition() -> None:
    assert tuple(mempath_run.CUDA_ALLOCATORS) == CUDA_ALLOCS


def test_generic_lists_gpu_checks_and_cuda_allocators_only_with_a_gpu(
        gpu_config: Path, cpu_config: Path) -> None:
    expected = set(LATENCY_CHECKS) if generic_has_gpu() else set(LATENCY_CHECKS) - GPU_ONLY
    assert latency_checks(listed('generic.py')) == expected
    assert latency_checks(listed(str(gpu_config))) == set(LATENCY_CHECKS)
    cpu = latency_checks(listed(str(cpu_config)))
    assert cpu == {'MempathChase', sweep('system'), sweep('numa')}


# ids not named like the `gpu` marker (conftest.py skips those without a GPU)
@pytest.mark.parametrize('tag', ['acceptance', 'full', 'latency', 'gpu', 'atomics'],
                         ids=lambda tag: f'tag_{tag}')
def test_tags_select_the_latency_checks(tag: str) -> None:
    names = latency_checks(listed('alps.py', '--system', 'daint:normal', '--tag', tag))
    assert names == {n for n, tags in LATENCY_CHECKS.items() if tag in tags}


# ---- command lines (dry run) --------------------------------------------------------------

def dry_run_commands(config: Path, prefix: Path, *args: str) -> dict[str, list[str]]:
    """Check name -> the `mempath` arguments its job script runs (`reframe --dry-run`)."""
    report = prefix / 'report.json'
    out = reframe('-C', str(config), '-c', str(CHECKS / 'latency.py'), '--dry-run',
                  '--prefix', str(prefix), '--report-file', str(report), *args)
    assert out.returncode == 0, out.stdout + out.stderr
    commands = {}
    for tc in json.loads(report.read_text())['runs'][0]['testcases']:
        if tc['name'] in LATENCY_CHECKS:
            script = Path(tc['stagedir']) / 'rfm_job.sh'
            line = next(l for l in script.read_text().splitlines() if '/mempath ' in l)
            argv = shlex.split(line)
            commands[tc['name']] = argv[1:]
    return commands


def test_commands_of_the_checks(gpu_config: Path, tmp_path: Path) -> None:
    cmds = dry_run_commands(gpu_config, tmp_path / 'rfm')
    assert cmds == {
        'MempathChase': ['chase', '--all', '--mem', 'local-host,local-hbm,peer-host,peer-hbm', '--size', '1GiB',
                         '--output', 'chase.h5'],
        **{sweep(a): ['chase', '--all', '--pattern', 'random,sequential', '--alloc', a,
                      '--mem', 'local-host,local-hbm,peer-host,peer-hbm', '--output', 'chase_sweep.h5']
           for a in CHASE_SWEEP_ALLOCS},
        'MempathPingPong': ['pingpong', '--alloc', 'pinned', '--output', 'pingpong.h5'],
        **{pingpong_full(a): ['pingpong', '--alloc', a, '--output', 'pingpong_full.h5']
           for a in PINGPONG_FULL_ALLOCS},
        'MempathAtomics': ['atomics', '--all', '--output', 'atomics.h5'],
    }


def test_a_cpu_partition_runs_the_sweeps_of_host_allocators_only(cpu_config: Path,
                                                                 tmp_path: Path) -> None:
    cmds = dry_run_commands(cpu_config, tmp_path / 'rfm')
    assert set(cmds) == {'MempathChase', sweep('system'), sweep('numa')}
    assert cmds[sweep('system')][-6:-4] == ['--alloc', 'system']


def test_variables_change_the_commands(gpu_config: Path, tmp_path: Path) -> None:
    cmds = dry_run_commands(
        gpu_config, tmp_path / 'rfm', '-n', 'MempathChase', '-n', 'MempathPingPong',
        '-S', 'MempathChase.pus=cpu0,gpu0', '-S', 'MempathChase.size=64MiB',
        '-S', 'MempathChase.reps=5', '-S', 'MempathPingPong.round_trips=100',
        '-S', 'MempathPingPong.timeout=3', '-S', 'MempathPingPong.mems=numa0',
        '-S', 'MempathChaseSweep.mems=numa0,gpu0', '-S', 'MempathChaseSweep.reps=3',
        '-S', 'MempathPingPongFull.warmup=10')
    assert cmds['MempathChase'] == ['chase', '--all', '--pu', 'cpu0,gpu0', '--mem', 'local-host,local-hbm,peer-host,peer-hbm',
                                    '--size', '64MiB', '--reps', '5', '--output', 'chase.h5']
    assert cmds['MempathPingPong'] == ['pingpong', '--alloc', 'pinned', '--mem', 'numa0',
                                       '--round-trips', '100', '--stall-timeout', '3',
                                       '--output', 'pingpong.h5']
    # A per-allocator check ends its case options with `--alloc X`, before the flags.
    for a in CHASE_SWEEP_ALLOCS:
        assert cmds[sweep(a)] == ['chase', '--all', '--pattern', 'random,sequential',
                                  '--alloc', a, '--mem', 'numa0,gpu0', '--reps', '3',
                                  '--output', 'chase_sweep.h5']
    for a in PINGPONG_FULL_ALLOCS:
        assert cmds[pingpong_full(a)] == ['pingpong', '--alloc', a, '--warmup', '10',
                                          '--output', 'pingpong_full.h5']


# ---- the checks run by ReFrame with a stand-in binary ---------------------------------------

FAKE_CMAKE = """cmake_minimum_required(VERSION 3.20)
project(fake_mempath NONE)
file(COPY ${CMAKE_CURRENT_SOURCE_DIR}/mempath ${CMAKE_CURRENT_SOURCE_DIR}/cases.h5
     DESTINATION ${CMAKE_BINARY_DIR})
"""


def fake_mempath(src: Path, lines: list[str], exit_code: int = 0, write_h5: bool = True,
                 unverified: int = 0, mark_verified: bool = True) -> None:
    """A stand-in `mempath` printing the summary lines of the subcommand it is given, each
    `ok` line with `verified=` (the first `unverified` ok cases 0; none with
    `mark_verified` False, as older binaries printed them), and writing its
    `--output` file."""
    src.mkdir()
    (src / 'CMakeLists.txt').write_text(FAKE_CMAKE)
    (src / 'cases.h5').write_bytes(b'')  # the checks only ask that the file exists
    marked, ok_so_far = [], 0
    for line in lines:
        if mark_verified and re.search(r'\bstatus=ok\b', line) and 'verified=' not in line:
            line += f' verified={int(ok_so_far >= unverified)}'
            ok_so_far += 1
        marked.append(line)

    def block(bench: str) -> str:
        body = '\n'.join(l for l in marked if l.split()[1] == bench)
        return f"cat <<'EOF'\n{body}\nEOF\n"

    copy = 'cp "$(dirname "$0")/cases.h5" "$out"\n' if write_h5 else ''
    script = src / 'mempath'
    script.write_text(
        '#!/bin/sh\nsub=$1\nout=\nwhile [ $# -gt 0 ]; do\n'
        '  [ "$1" = --output ] && out=$2\n  shift\ndone\n' + copy
        + f'case $sub in\n  chase) {block("chase")};;\n  pingpong) {block("pingpong")};;\n'
        + 'esac\necho "mempath: cases written to $out" >&2\n'
        + f'exit {exit_code}\n')
    script.chmod(0o755)


def run_checks(tmp_path: Path, config: Path, *names: str) -> dict[str, dict]:
    report = tmp_path / 'report.json'
    # ReFrame matches `-n` against the display name without its spaces.
    args = [a for n in names for a in ('-n', f"^{n.replace(' ', '')}$")]
    out = reframe('-C', str(config), '-c', str(CHECKS / 'latency.py'), '-r', *args,
                  '-S', f'MempathBuild.sourcesdir={tmp_path / "fake_src"}',
                  '--prefix', str(tmp_path / 'rfm'), '--report-file', str(report))
    assert report.is_file(), out.stdout + out.stderr
    return {tc['name']: tc for tc in json.loads(report.read_text())['runs'][0]['testcases']}


def perf(case: dict) -> dict[str, tuple[float, str]]:
    return {k.split(':')[-1]: (v[0], v[4]) for k, v in case['perfvalues'].items()}


def test_checks_report_their_class_variables_and_keep_the_hdf5(tmp_path: Path,
                                                               gpu_config: Path) -> None:
    skipped_chase = chase_line(pu='gpu0', mem='numa0', via='c2c', status='skipped').replace(
        'reason="the walk did not end on the element the chain predicts"',
        'reason="GPU 0 cannot access pageable memory (no ATS/HMM)"')
    lines = [*SCHEMA_CHASE, skipped_chase,
             chase_line(pu='gpu1', mem='gpu1', alloc='device', ns=380.0),   # faster GPU
             chase_line(pu='cpu1', mem='numa1', ns=120.5),                   # slower socket
             *SCHEMA_PINGPONG,
             pingpong_line(a='cpu0', b='cpu0', mem='numa0', via='local', ns=95.5),
             pingpong_line(a='cpu0', b='gpu0', mem='gpu0', alloc='device', via='c2c',
                           status='skipped')
             .replace('timed out: a partner waited over 10.000000 s',
                      'cudaMalloc memory is not mapped for CPU access')]
    fake_mempath(tmp_path / 'fake_src', lines)
    cases = run_checks(tmp_path, gpu_config, 'MempathChase', 'MempathPingPong')
    for name, output in (('MempathChase', 'chase.h5'), ('MempathPingPong', 'pingpong.h5')):
        assert cases[name]['result'] == 'pass', cases[name]['fail_reason']
        kept = Path(cases[name]['outputdir']) / output
        assert kept.is_file(), f'{output} not kept in {kept.parent}'
    assert perf(cases['MempathChase']) == {
        'latency_ns_cpu_numa_local_numa_random_max': (120.5, 'ns'),
        'latency_ns_gpu_gpu_local_device_random_max': (402.13, 'ns')}
    assert perf(cases['MempathPingPong']) == {
        'rtt_ns_cpu_gpu_numa_c2c_pinned_max': (1890.3, 'ns'),
        'rtt_ns_cpu_cpu_numa_local_pinned_max': (95.5, 'ns')}


def test_per_allocator_checks_report_their_allocators_classes(tmp_path: Path,
                                                             gpu_config: Path) -> None:
    lines = [chase_line(alloc='numa', size=1 << 20, ns=90.0),
             chase_line(alloc='numa', ns=150.25),
             chase_line(alloc='numa', pattern='sequential', ns=6.5),
             chase_line(pu='gpu0', mem='numa0', alloc='numa', via='c2c', ns=810.0),
             chase_line(pu='gpu1', mem='numa1', alloc='numa', via='c2c', ns=790.0),
             pingpong_line(alloc='pinned', ns=1890.3),
             pingpong_line(a='cpu1', b='gpu1', mem='numa1', alloc='pinned', ns=1950.0)]
    fake_mempath(tmp_path / 'fake_src', lines)
    cases = run_checks(tmp_path, gpu_config, sweep('numa'), pingpong_full('pinned'))
    for name, output in ((sweep('numa'), 'chase_sweep.h5'),
                         (pingpong_full('pinned'), 'pingpong_full.h5')):
        assert cases[name]['result'] == 'pass', cases[name]['fail_reason']
        assert (Path(cases[name]['outputdir']) / output).is_file()
    assert perf(cases[sweep('numa')]) == {
        'latency_ns_cpu_numa_local_numa_random_max': (150.25, 'ns'),
        'latency_ns_cpu_numa_local_numa_sequential_max': (6.5, 'ns'),
        'latency_ns_gpu_numa_c2c_numa_random_max': (810.0, 'ns')}
    assert perf(cases[pingpong_full('pinned')]) == {
        'rtt_ns_cpu_gpu_numa_c2c_pinned_max': (1950.0, 'ns')}


SKIPPED = chase_line(status='skipped')


@pytest.mark.parametrize('lines, exit_code, write_h5, unverified, mark, reason', [
    ([SCHEMA_CHASE[0], chase_line(mem='numa1', status='failed')], 1, True, 0, True,
     'exited with 1'),
    ([SCHEMA_CHASE[0], chase_line(mem='numa1', status='failed')], 0, True, 0, True,
     'status=failed'),
    ([SKIPPED], 0, True, 0, True, 'no case finished'),
    ([SCHEMA_CHASE[0], chase_line(mem='numa1', status='timeout')], 0, True, 0, True,
     'status timeout'),
    ([SCHEMA_CHASE[0], SCHEMA_CHASE[1]], 0, True, 1, True, 'are not verified'),
    ([SCHEMA_CHASE[0], SCHEMA_CHASE[1]], 0, True, 0, False, 'carry no verified='),
    ([SCHEMA_CHASE[0]], 0, False, 0, True, 'chase.h5 was not written'),
    ([], 2, True, 0, True, 'exited with 2'),
])
def test_chase_sanity_fails_on_failed_unverified_or_missing_cases(
        tmp_path: Path, gpu_config: Path, lines, exit_code, write_h5, unverified, mark,
        reason) -> None:
    fake_mempath(tmp_path / 'fake_src', lines, exit_code, write_h5, unverified, mark)
    case = run_checks(tmp_path, gpu_config, 'MempathChase')['MempathChase']
    assert case['result'] == 'fail'
    assert case['fail_phase'] == 'sanity'
    assert reason in case['fail_reason']


def test_pingpong_sanity_fails_on_a_timed_out_pair(tmp_path: Path, gpu_config: Path) -> None:
    fake_mempath(tmp_path / 'fake_src',
                 [pingpong_line(), pingpong_line(a='gpu0', b='gpu0', status='failed')])
    case = run_checks(tmp_path, gpu_config, 'MempathPingPong')['MempathPingPong']
    assert (case['result'], case['fail_phase']) == ('fail', 'sanity')
    assert 'status=failed' in case['fail_reason']


@pytest.mark.parametrize('hbm_ns, result', [(347.0, 'pass'), (12.0, 'pass'), (500.0, 'fail')])
def test_gh200_references_bound_the_class_latency_from_above(tmp_path: Path, gh200_config: Path,
                                                             hbm_ns: float, result: str) -> None:
    lines = [chase_line(pu='gpu0', mem='gpu0', alloc='device', ns=300.0),
             chase_line(pu='gpu1', mem='gpu1', alloc='device', ns=hbm_ns),
             chase_line(pu='cpu1', mem='numa1', ns=160.0),
             chase_line(pu='cpu1', mem='numa2', via='interconnect', ns=5000.0)]  # no reference
    fake_mempath(tmp_path / 'fake_src', lines)
    case = run_checks(tmp_path, gh200_config, 'MempathChase')['MempathChase']
    assert case['result'] == result, case['fail_reason']
    # The class reports its slowest GPU.
    assert perf(case)['latency_ns_gpu_gpu_local_device_random_max'] == (max(300.0, hbm_ns), 'ns')
    refs = {k.split(':')[-1]: v[1:4] for k, v in case['perfvalues'].items()}
    assert refs['latency_ns_gpu_gpu_local_device_random_max'] == [344, None, 0.25]
    assert refs['latency_ns_cpu_numa_local_numa_random_max'][0] == 170
    assert refs['latency_ns_cpu_numa_interconnect_numa_random_max'][0] == 0
    if result == 'fail':
        assert case['fail_phase'] == 'performance'
        assert 'latency_ns_gpu_gpu_local_device_random_max' in case['fail_reason']
