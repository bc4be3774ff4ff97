"""The one parser of `MEMPATH` summary lines (reframe_checks/mempath_summary.py), the
classes of paths the checks report (class_fields, class_extremes, ClassMetric), the
sanity built on it (mempath_run.summary_sane), and the family tables: every row becomes
the check it was before the tables (names, tags, result files), the full sweeps split per
allocator."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_reframe import CHECKS, CONFIGS, generic_variant, reframe

import applications  # noqa: E402
import latency  # noqa: E402
import mempath_summary  # noqa: E402
import paper_set  # noqa: E402
import mempath_summary as ms  # noqa: E402
from mempath_summary import ClassMetric, MalformedLine, Metric  # noqa: E402

SKIPPED = ('MEMPATH chase pu=gpu0 cpu=-1 mem=numa0 alloc=numa pattern=random size=4096 '
           'status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM): x=1"')


# ---- parse_line ------------------------------------------------------------------------

@pytest.mark.parametrize('line', ['', 'mempath: 5 cases written to bw.h5', 'MEMPATHS x=1',
                                  'MEMPATH_BIN=/bin/mempath', '# MEMPATH bw status=ok'])
def test_untagged_lines_are_no_summary_lines(line: str) -> None:
    assert ms.parse_line(line) is None


def test_quoted_values_keep_spaces_and_equals_signs() -> None:
    s = ms.parse_line(SKIPPED + '\n')
    assert s.bench == 'chase' and s.status == 'skipped'
    assert s['reason'] == 'GPU 0 cannot access pageable memory (no ATS/HMM): x=1'
    assert list(s.fields)[:3] == ['pu', 'cpu', 'mem']           # the printed order


def test_skipped_lines_have_no_figures() -> None:
    s = ms.parse_line(SKIPPED)
    assert s.number('median_ns') is None and s.get('median_ns') == ''
    with pytest.raises(KeyError):
        s['median_ns']


def test_dash_is_empty_and_nan_no_number() -> None:
    s = ms.parse_line('MEMPATH bw op=read pu=cpu0 mem=numa0 dst=- status=ok median_GBps=nan '
                      'min_GBps=1.5')
    assert s['dst'] == '' and s.number('median_GBps') is None and s.number('min_GBps') == 1.5


@pytest.mark.parametrize('line, why', [
    ('MEMPATH', 'no benchmark'),
    ('MEMPATH bw', 'no benchmark'),
    ('MEMPATH bw op=read status=ok reason="unclosed', 'No closing quotation'),
    ('MEMPATH bw op=read stray status=ok', "'stray' is not key=value"),
    ('MEMPATH bw =1 status=ok', "'=1' is not key=value"),
    ('MEMPATH bw op=read op=copy status=ok', "'op' given twice"),
    ('MEMPATH bw op=read median_GBps=1', 'no status'),
])
def test_malformed_tagged_lines_raise(line: str, why: str) -> None:
    with pytest.raises(MalformedLine, match=re.escape(why)):
        ms.parse_line(line)


def test_parse_lines_keeps_one_benchmark_in_order() -> None:
    lines = ['MEMPATH bw op=read status=ok', 'noise', SKIPPED, 'MEMPATH bw op=copy status=failed']
    assert [s['op'] for s in ms.parse_lines(lines, 'bw')] == ['read', 'copy']
    assert [s.bench for s in ms.parse_lines(lines)] == ['bw', 'chase', 'bw']


# ---- Metric ----------------------------------------------------------------------------

def chase(size: int, ns: str, status: str = 'ok', alloc: str = 'numa') -> ms.SummaryLine:
    figure = f' median_ns={ns}' if ns else ''
    return ms.parse_line(f'MEMPATH chase pu=cpu0 mem=numa0 alloc={alloc} size={size} '
                         f'status={status}{figure}')


def test_metric_keeps_the_largest_size_and_only_ok_lines_with_the_figure() -> None:
    lines = [chase(1 << 30, '190.5'), chase(4096, '1.2'), chase(1 << 31, '', 'ok'),
             chase(1 << 32, '999', 'failed'), chase(1 << 20, '20', alloc='pinned')]
    metric = Metric('latency_ns_{pu}_{mem}_{alloc}', 'median_ns', 'ns')
    assert metric.values(lines) == {'latency_ns_cpu0_numa0_numa': (190.5, 'ns'),
                                    'latency_ns_cpu0_numa0_pinned': (20.0, 'ns')}


def test_metric_without_keep_takes_the_best_value() -> None:
    lines = [chase(1 << 30, '5'), chase(4096, '7'), chase(1 << 20, '6')]
    assert Metric('x_{pu}', 'median_ns', 'ns', keep='').values(lines) == {'x_cpu0': (7.0, 'ns')}


# ---- classes of paths: class_fields, class_extremes, ClassMetric -------------------------

def test_class_fields_give_kinds_allocator_classes_and_a_joined_via() -> None:
    fields = {'pu': 'gpu3', 'mem': 'numa12', 'alloc': 'pinned', 'via': 'c2c+interconnect',
              'src_alloc': 'system', 'dst_alloc': 'registered', 'a': 'cpus', 'b': 'cpu10'}
    out = ms.class_fields(fields)
    assert {k: out[k] for k in fields if k != 'via'} == {k: v for k, v in fields.items()
                                                         if k != 'via'}     # kept as given
    assert (out['pu_kind'], out['mem_kind'], out['a_kind'], out['b_kind']) == \
        ('gpu', 'numa', 'cpus', 'cpu')
    assert (out['alloc_class'], out['src_alloc_class'], out['dst_alloc_class']) == \
        ('pagelocked', 'pageable', 'pagelocked')
    assert out['via'] == 'c2c_interconnect'
    assert 'pu_class' not in out and 'via_class' not in out     # only allocator fields


@pytest.mark.parametrize('alloc, alloc_class', [
    ('system', 'pageable'), ('numa', 'pageable'), ('pinned', 'pagelocked'),
    ('registered', 'pagelocked'), ('device', 'device'), ('managed', 'managed'),
    ('hugetlb', 'hugetlb'),                 # an allocator no class knows stays itself
])
def test_allocator_classes(alloc: str, alloc_class: str) -> None:
    assert ms.class_fields({'alloc': alloc})['alloc_class'] == alloc_class


@pytest.mark.parametrize('via, name', [
    ('local', 'local'), ('c2c+interconnect', 'c2c_interconnect'), ('NVLink', 'nvlink'),
    ('pcie+interconnect+', 'pcie_interconnect'), ('', 'unknown'), (None, 'unknown'),
])
def test_class_fields_normalise_via(via, name) -> None:
    fields = {'pu': 'cpu0'} if via is None else {'pu': 'cpu0', 'via': via}
    assert ms.class_fields(fields)['via'] == name


ITEMS = [('a', 5.0, 'a5'), ('b', 1.0, 'b1'), ('a', 2.0, 'a2'), ('a', 9.0, 'a9'),
         ('b', 1.0, 'b1 again'), ('b', 3.0, 'b3')]


def test_class_extremes_min_keeps_each_class_smallest_and_its_item() -> None:
    got = ms.class_extremes(ITEMS)
    assert got == {'a': (2.0, 'a2'), 'b': (1.0, 'b1')}      # a tie keeps the first
    assert list(got) == ['a', 'b']
    assert ms.class_extremes(reversed(ITEMS), 'min') == {'a': (2.0, 'a2'), 'b': (1.0, 'b1 again')}


def test_class_extremes_max_keeps_each_class_largest() -> None:
    assert ms.class_extremes(ITEMS, 'max') == {'a': (9.0, 'a9'), 'b': (3.0, 'b3')}
    assert ms.class_extremes([], 'max') == {}


@pytest.mark.parametrize('worst', ['median', 'MIN', '', 'mean'])
def test_class_extremes_refuses_other_worsts(worst: str) -> None:
    with pytest.raises(ValueError, match='worst is min or max'):
        ms.class_extremes(ITEMS, worst)


def chase_line(pu: str, mem: str, via: str, size: int, ns: float | None,
               status: str = 'ok') -> ms.SummaryLine:
    figure = f' median_ns={ns}' if ns is not None else ''
    return ms.parse_line(f'MEMPATH chase pu={pu} mem={mem} alloc=numa via={via} '
                         f'pattern=random size={size} status={status}{figure}')


LATENCY = ClassMetric(Metric('{pu}_{mem}_{alloc}_{pattern}', 'median_ns', 'ns'),
                      'lat_{pu_kind}_{mem_kind}_{via}_{alloc}', 'max')


def test_a_size_sweep_collapses_on_keep_before_the_class_takes_its_worst() -> None:
    """Each path at its largest size, then the class's slowest path: the small sizes'
    figures (an outlier of 300 ns at 4 KiB) never reach the class."""
    lines = [chase_line('cpu0', 'numa0', 'local', 4096, 300.0),
             chase_line('cpu0', 'numa0', 'local', 1 << 30, 120.0),
             chase_line('cpu1', 'numa1', 'local', 1 << 30, 130.0),
             chase_line('cpu1', 'numa1', 'local', 4096, 2.0),
             chase_line('cpu0', 'numa1', 'interconnect', 1 << 30, 250.0),
             chase_line('cpu1', 'numa0', 'interconnect', 1 << 30, 240.0),
             chase_line('cpu1', 'numa0', 'interconnect', 1 << 31, 999.0, 'failed'),
             chase_line('gpu0', 'numa0', 'c2c', 1 << 30, None, 'skipped')]
    assert LATENCY.values(lines) == {'lat_cpu_numa_local_numa_max': (130.0, 'ns'),
                                     'lat_cpu_numa_interconnect_numa_max': (250.0, 'ns')}
    assert LATENCY.unit == 'ns'


def stream_line(pu: str, mem: str, kernel: str, threads: int, gbps: float) -> ms.SummaryLine:
    return ms.parse_line(f'MEMPATH stream pu={pu} mem={mem} alloc=numa via=local '
                         f'threads={threads} kernel={kernel} size=1 status=ok '
                         f'best_GBps={gbps} median_GBps=1')


STREAM = [stream_line('cpu0', 'numa0', 'triad', 1, 10.0),   # cpu0's sweep: best 50 at 72
          stream_line('cpu0', 'numa0', 'triad', 72, 50.0),
          stream_line('cpu1', 'numa1', 'triad', 72, 40.0),
          stream_line('cpu1', 'numa1', 'triad', 36, 45.0),  # cpu1's best: 45
          stream_line('cpu0', 'numa0', 'copy', 72, 30.0),
          stream_line('cpu0', 'numa0', 'scale', 72, 5.0),
          stream_line('cpu0', 'numa0', 'dot', 72, 6.0)]
THROUGHPUT = Metric('{kernel}_{pu}_{mem}_{alloc}', 'best_GBps', 'GB/s', keep='')


def test_a_thread_sweep_collapses_to_its_best_before_the_class_takes_its_minimum() -> None:
    metric = ClassMetric(THROUGHPUT, '{kernel}_{pu_kind}_{mem_kind}_{via}_{alloc}')
    assert metric.values(STREAM) == {'copy_cpu_numa_local_numa_min': (30.0, 'GB/s'),
                                     'dot_cpu_numa_local_numa_min': (6.0, 'GB/s'),
                                     'scale_cpu_numa_local_numa_min': (5.0, 'GB/s'),
                                     'triad_cpu_numa_local_numa_min': (45.0, 'GB/s')}


def test_only_keeps_the_lines_whose_field_has_an_allowed_value() -> None:
    metric = ClassMetric(THROUGHPUT, '{kernel}_{pu_kind}_{mem_kind}_{via}_{alloc}',
                         only=('kernel', ('copy', 'triad')))
    assert metric.values(iter(STREAM)) == {'copy_cpu_numa_local_numa_min': (30.0, 'GB/s'),
                                           'triad_cpu_numa_local_numa_min': (45.0, 'GB/s')}
    nothing = ClassMetric(THROUGHPUT, '{kernel}_{pu_kind}', only=('kernel', ('add',)))
    assert nothing.values(STREAM) == {}


@pytest.mark.parametrize('worst', ['min', 'max'])
def test_class_names_end_in_their_worst(worst: str) -> None:
    metric = ClassMetric(THROUGHPUT, '{kernel}_{pu_kind}', worst)
    values = metric.values(STREAM)
    assert sorted(values) == [f'{k}_cpu_{worst}' for k in ('copy', 'dot', 'scale', 'triad')]
    assert values[f'triad_cpu_{worst}'] == ((45.0 if worst == 'min' else 50.0), 'GB/s')


# ---- summary_sane: the sanity every check shares ----------------------------------------

@pytest.mark.parametrize('lines, only_passing, error', [
    (['MEMPATH bw op=read status=ok', 'MEMPATH bw op=copy status=skipped'], True, None),
    (['MEMPATH bw op=read status=skipped'], False, 'no case finished (status=ok)'),
    (['MEMPATH chase status=ok'], False, 'no case finished (status=ok)'),
    (['MEMPATH bw op=read status=ok', 'MEMPATH bw status=failed'], False, 'a case failed'),
    (['MEMPATH bw op=read status=ok', 'MEMPATH bw status=timeout'], False, None),
    (['MEMPATH bw op=read status=ok', 'MEMPATH bw status=timeout'], True,
     'lines with status timeout'),
    (['MEMPATH bw op=read status=ok', 'MEMPATH bw op="x status=ok'], False,
     'unreadable summary line'),
])
def test_summary_sanity(tmp_path: Path, lines, only_passing, error) -> None:
    from reframe.core.exceptions import SanityError
    from reframe.utility import sanity as sn

    import mempath_run
    out = tmp_path / 'rfm_job.out'
    out.write_text('\n'.join(lines) + '\n')
    check = mempath_run.summary_sane(str(out), 'bw', only_passing)
    if error is None:
        assert sn.evaluate(check) is True
    else:
        with pytest.raises(SanityError, match=re.escape(error)):
            sn.evaluate(check)


# ---- the family tables -------------------------------------------------------------------

#: Every check, its tags, time limit and systems as `reframe --describe` gives them, on a
#: partition with every feature (nvgpu, mpi): the checks of before the family tables
#: (commit baabb0b), except that the full sweeps of chase, ping-pong and STREAM are split
#: per allocator (issue 13, mempath_run.PerAllocator: `%alloc=`), the CUDA allocators on
#: GPU partitions only. `*`: every compute partition.
CHECKS_OF_THE_TABLES = {
    'MempathAllocatorMatrix': ({'full', 'gpu'}, '2h', '+nvgpu'),
    **{f'MempathBandwidth %op={op} %pu_kind={kind} %coverage=full': ({'full', kind}, '2h', systems)
       for op in ('read', 'write', 'copy') for kind, systems in (('cpu', '*'), ('gpu', '+nvgpu'))},
    # The nightly's bandwidth (issue 30): reads and copies of each memory role, no sweep.
    **{f'MempathBandwidth %op={op} %pu_kind={kind} %coverage=acceptance': ({'acceptance', kind}, '2h', systems)
       for op in ('read', 'copy') for kind, systems in (('cpu', '*'), ('gpu', '+nvgpu'))},
    'MempathChase': ({'acceptance', 'latency'}, '20m', '*'),
    'MempathChaseSweep %alloc=system': ({'full', 'latency'}, '2h', '*'),
    'MempathChaseSweep %alloc=numa': ({'full', 'latency'}, '2h', '*'),
    'MempathChaseSweep %alloc=pinned': ({'full', 'latency'}, '2h', '+nvgpu'),
    'MempathChaseSweep %alloc=registered': ({'full', 'latency'}, '2h', '+nvgpu'),
    'MempathChaseSweep %alloc=managed': ({'full', 'latency'}, '2h', '+nvgpu'),
    'MempathChaseSweep %alloc=device': ({'full', 'latency'}, '2h', '+nvgpu'),
    'MempathGemm': ({'applications', 'acceptance', 'gpu'}, '20m', '+nvgpu'),
    'MempathGemmPlacement': ({'full', 'applications', 'gpu'}, '2h', '+nvgpu'),
    'MempathInventory': ({'acceptance', 'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathMpiBandwidth %ranks_per_node=1': ({'acceptance', 'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathMpiBandwidth %ranks_per_node=2': ({'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathMpiBandwidth %ranks_per_node=4': ({'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathNccl': ({'scaleout', 'nccl'}, '20m', '+mpi +nvgpu'),
    'MempathPingPong': ({'acceptance', 'gpu', 'latency'}, '20m', '+nvgpu'),
    # Ping-pong needs CUDA whatever the flag's allocator: every one on GPU partitions.
    'MempathPingPongFull %alloc=numa': ({'full', 'gpu', 'latency'}, '2h', '+nvgpu'),
    'MempathPingPongFull %alloc=pinned': ({'full', 'gpu', 'latency'}, '2h', '+nvgpu'),
    'MempathPingPongFull %alloc=managed': ({'full', 'gpu', 'latency'}, '2h', '+nvgpu'),
    'MempathPingPongFull %alloc=device': ({'full', 'gpu', 'latency'}, '2h', '+nvgpu'),
    'MempathAtomics': ({'atomics', 'full', 'gpu'}, '2h', '+nvgpu'),
    'MempathStream': ({'applications', 'acceptance'}, '20m', '*'),
    'MempathStreamSweep %alloc=system': ({'full', 'applications'}, '2h', '*'),
    'MempathStreamSweep %alloc=numa': ({'full', 'applications'}, '2h', '*'),
    'MempathStreamSweep %alloc=pinned': ({'full', 'applications'}, '2h', '+nvgpu'),
    'MempathStreamSweep %alloc=registered': ({'full', 'applications'}, '2h', '+nvgpu'),
    'MempathStreamSweep %alloc=managed': ({'full', 'applications'}, '2h', '+nvgpu'),
    'MempathStreamSweep %alloc=device': ({'full', 'applications'}, '2h', '+nvgpu'),
    'MempathTransferSmBandwidth': ({'full', 'transfers', 'gpu'}, '2h', '+nvgpu'),
    'MempathTransferAllGpus': ({'full', 'transfers', 'gpu'}, '2h', '+nvgpu'),
    'MempathTransferBandwidth %coverage=acceptance': ({'acceptance', 'gpu', 'transfers'}, '2h', '+nvgpu'),
    'MempathTransferBandwidth %coverage=full': ({'full', 'transfers', 'gpu'}, '2h', '+nvgpu'),
    'MempathTransferLatency %coverage=acceptance': ({'acceptance', 'gpu', 'transfers'}, '2h', '+nvgpu'),
    'MempathTransferLatency %coverage=full': ({'full', 'transfers', 'gpu'}, '2h', '+nvgpu'),
    'MempathTransferSweep': ({'full', 'transfers', 'gpu'}, '2h', '+nvgpu'),
    'MempathUnifiedMemory': ({'full', 'gpu'}, '2h', '+nvgpu'),
    'MempathVetting': ({'vetting'}, '20m', '*'),
    'NcclTestsAllReduce': ({'scaleout', 'nccl'}, '20m', '+mpi +nvgpu'),
}
LIMITS = {'2h': 7200.0, '20m': 1200.0, '30m': 1800.0, '40m': 2400.0}
#: The paper checks (reframe_checks/paper.py), one per step of the one list.
PAPER_SYSTEMS = {'cpu': '*', 'gpu': '+nvgpu', 'gpu-ranks': '+mpi +nvgpu', 'nodes': '+mpi'}
CHECKS_OF_THE_TABLES.update({
    s.check: ({'paper', s.family}, f'{s.minutes}m',
              '+mpi +nvgpu' if s.family == 'nccl' else PAPER_SYSTEMS[s.needs])
    for s in paper_set.STEPS})
#: The checks split per allocator, their allocators, and the options before `--alloc`.
PER_ALLOCATOR = {
    'MempathChaseSweep': (('system', 'numa', 'pinned', 'registered', 'managed', 'device'),
                          ['--all', '--pattern', 'random,sequential']),
    'MempathPingPongFull': (('numa', 'pinned', 'managed', 'device'), []),
    'MempathStreamSweep': (('system', 'numa', 'pinned', 'registered', 'managed', 'device'),
                           ['--all']),
}


@pytest.fixture
def every_feature(tmp_path: Path) -> Path:
    """generic.py with a partition that has every feature the checks ask for."""
    return generic_variant(tmp_path / 'generic_all.py', ['gpu', 'nvgpu', 'mpi'])


@pytest.fixture(scope='module')
def described(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """`reframe --describe` of every check on a partition with every feature, by name."""
    config = generic_variant(tmp_path_factory.mktemp('describe') / 'generic_all.py',
                             ['gpu', 'nvgpu', 'mpi'])
    out = reframe('-C', str(config), '-c', str(CHECKS), '--describe')
    assert out.returncode == 0, out.stdout + out.stderr
    checks = json.loads(out.stdout[out.stdout.index('['):out.stdout.rindex(']') + 1])
    return {d['display_name']: d for d in checks}


def test_the_tables_give_every_check_its_tags_limit_and_systems(described) -> None:
    got = {name: (set(d['tags']), d['time_limit'], d['valid_systems'])
           for name, d in described.items()}
    assert got == {name: (tags, LIMITS[limit], [BY_FEATURE[systems]])
                   for name, (tags, limit, systems) in CHECKS_OF_THE_TABLES.items()}


@pytest.mark.parametrize('check', sorted(PER_ALLOCATOR))
def test_a_per_allocator_check_runs_its_allocator_where_it_can(described, check) -> None:
    """`--alloc ALLOC` after the row's case options; a CUDA allocator asks for a GPU
    partition and the `cuda` environment, system and numa for neither (chase, STREAM)."""
    allocs, options = PER_ALLOCATOR[check]
    split = {name: d for name, d in described.items() if name.split(' ')[0] == check}
    assert sorted(split) == sorted(f'{check} %alloc={a}' for a in allocs)
    for alloc in allocs:
        d = split[f'{check} %alloc={alloc}']
        assert d['alloc'] == alloc
        assert d['case_options'] == [*options, '--alloc', alloc]
        gpu = alloc in ('pinned', 'registered', 'managed', 'device') or check == 'MempathPingPongFull'
        assert d['valid_systems'] == ['+remote +nvgpu' if gpu else '+remote'], alloc
        assert d['valid_prog_environs'] == ['+compiler +cuda' if gpu else '+compiler'], alloc


#: Issue 13: the same partitions, selected by feature as centres write it (`*` would land
#: on login nodes; `remote` marks compute partitions).
BY_FEATURE = {'*': '+remote', '+nvgpu': '+remote +nvgpu', '+mpi': '+remote +mpi',
              '+mpi +nvgpu': '+remote +mpi +nvgpu'}


def test_rows_and_flags_make_one_command_form(every_feature: Path, tmp_path: Path) -> None:
    """`SUBCOMMAND CASE_OPTIONS FLAGS --output FILE EXTRA` for the families whose command
    lines no other test file pins: booleans give the flag alone, set variables their
    flag, unset ones nothing, and extra options come last."""
    report = tmp_path / 'report.json'
    out = reframe('-C', str(every_feature), '-c', str(CHECKS), '--dry-run',
                  '--prefix', str(tmp_path / 'rfm'), '--report-file', str(report),
                  '-n', 'MempathBandwidth%op=read%pu_kind=cpu', '-n', 'MempathUnifiedMemory',
                  '-n', 'MempathAllocatorMatrix', '-n', 'MempathMpiBandwidth%ranks_per_node=2',
                  '-n', 'MempathNccl',
                  '-S', 'MempathBandwidth.quick=true', '-S', 'MempathBandwidth.in_cache=true',
                  '-S', 'MempathBandwidth.size=8MiB', '-S', 'MempathBandwidth.pus=cpu0',
                  '-S', 'MempathUnifiedMemory.size=64MiB', '-S', 'MempathUnifiedMemory.reps=3',
                  '-S', 'MempathMpiBandwidth.max_size=1MiB',
                  '-S', 'MempathNccl.extra_options=--warmup,2')
    assert out.returncode == 0, out.stdout + out.stderr
    commands = {}
    for tc in json.loads(report.read_text())['runs'][0]['testcases']:
        if tc['stagedir'] and not tc['name'].startswith('MempathBuild'):
            script = Path(tc['stagedir']) / 'rfm_job.sh'
            line = next(l for l in script.read_text().splitlines() if '/mempath' in l)
            commands[tc['name']] = line.split(' ', 1)[1]
    assert commands == {
        'MempathBandwidth %op=read %pu_kind=cpu %coverage=full':
            'bw --all --op read --pu-kind cpu --size 8MiB --pu cpu0 --in-cache '
            '--threads all --kernel grid --output bw.h5',
        # Acceptance: its memory roles unless `mems` is set; quick unless `quick` is.
        'MempathBandwidth %op=read %pu_kind=cpu %coverage=acceptance':
            'bw --all --op read --pu-kind cpu --size 8MiB --pu cpu0 '
            '--mem local-host,local-hbm,peer-host,peer-hbm --in-cache '
            '--threads all --kernel grid --output bw.h5',
        'MempathUnifiedMemory': 'um --size 64MiB --reps 3 --output um.h5',
        'MempathAllocatorMatrix': 'allocmatrix --output allocmatrix.h5',
        'MempathMpiBandwidth %ranks_per_node=2': 'bw --max-size 1MiB --ppn 2 --output mpi_bw.h5',
        'MempathNccl': 'nccl --placement device,host,peer --output nccl.h5 --warmup 2',
    }


def test_a_class_counts_a_line_only_where_its_pages_stayed():
    """H100, 2026-11-25: a CPU chase of managed memory on gpu0 ran at host latency
    (155 ns: the pages had moved to numa0); the binary marks such a line `placed=0`, and
    it counts in no class. Lines without the field (older binaries) count as before."""
    chase = ('MEMPATH chase pu={pu} cpu=0 mem={mem} alloc={alloc} via={via} pattern=random '
             'size=1 line=64 locality=1 huge=0 {placed}status=ok median_ns={ns}')
    lines = mempath_summary.parse_lines([
        chase.format(pu='cpu0', mem='gpu0', alloc='managed', via='pcie', placed='placed=0 ', ns=155),
        chase.format(pu='cpu0', mem='numa0', alloc='numa', via='local', placed='placed=1 ', ns=120),
        chase.format(pu='cpu1', mem='numa1', alloc='numa', via='local', placed='placed=0 ', ns=300),
        chase.format(pu='gpu0', mem='gpu0', alloc='managed', via='local', placed='placed=1 ', ns=700),
        chase.format(pu='gpu1', mem='gpu1', alloc='device', via='local', placed='', ns=650)])
    assert latency.CHASE_METRIC.values(lines) == {
        'latency_ns_cpu_numa_local_numa_random_max': (120.0, 'ns'),
        'latency_ns_gpu_gpu_local_managed_random_max': (700.0, 'ns'),
        'latency_ns_gpu_gpu_local_device_random_max': (650.0, 'ns')}
    stream = ('MEMPATH stream pu=cpus mem=interleave alloc=numa via=interleave threads=8 '
              'kernel=triad size=1 placement=numa0:0.5,numa1:0.5 placed=1 status=ok '
              'best_GBps=90 median_GBps=80')
    assert applications.MempathStreamCommand.metric.values(
        mempath_summary.parse_lines([stream])) == {
        'triad_GBps_cpus_interleave_interleave_numa_min': (90.0, 'GB/s')}
