"""The one parser of `MEMPATH` summary lines (reframe_checks/mempath_summary.py), the
sanity built on it (mempath_run.summary_sane), and the family tables: every row becomes
the check it was before the tables (names, tags, result files)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from test_reframe import CHECKS, CONFIGS, generic_variant, reframe

sys.path.insert(0, str(CHECKS))

import mempath_summary as ms  # noqa: E402
from mempath_summary import MalformedLine, Metric  # noqa: E402

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

#: Every check, its tags, time limit and systems as `reframe --describe` gave them before
#: the family tables (commit baabb0b), on a partition with every feature (nvgpu, mpi).
CHECKS_BEFORE_TABLES = {
    'MempathAllocatorMatrix': ({'full', 'gpu'}, '2h', '+nvgpu'),
    'MempathBandwidth %op=copy %pu_kind=cpu': ({'full', 'acceptance', 'cpu'}, '2h', '*'),
    'MempathBandwidth %op=copy %pu_kind=gpu': ({'full', 'acceptance', 'gpu'}, '2h', '+nvgpu'),
    'MempathBandwidth %op=read %pu_kind=cpu': ({'full', 'acceptance', 'cpu'}, '2h', '*'),
    'MempathBandwidth %op=read %pu_kind=gpu': ({'full', 'acceptance', 'gpu'}, '2h', '+nvgpu'),
    'MempathBandwidth %op=write %pu_kind=cpu': ({'full', 'cpu'}, '2h', '*'),
    'MempathBandwidth %op=write %pu_kind=gpu': ({'full', 'gpu'}, '2h', '+nvgpu'),
    'MempathChase': ({'acceptance', 'latency'}, '20m', '*'),
    'MempathChaseSweep': ({'full', 'latency'}, '2h', '*'),
    'MempathGemm': ({'applications', 'acceptance', 'gpu'}, '20m', '+nvgpu'),
    'MempathGemmPlacement': ({'full', 'applications', 'gpu'}, '2h', '+nvgpu'),
    'MempathInventory': ({'acceptance', 'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathMpiBandwidth %ranks_per_node=1': ({'acceptance', 'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathMpiBandwidth %ranks_per_node=2': ({'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathMpiBandwidth %ranks_per_node=4': ({'mpi', 'scaleout'}, '20m', '+mpi'),
    'MempathNccl': ({'scaleout', 'nccl'}, '20m', '+mpi +nvgpu'),
    'MempathPingPong': ({'acceptance', 'gpu', 'latency'}, '20m', '+nvgpu'),
    'MempathPingPongFull': ({'full', 'gpu', 'latency'}, '2h', '+nvgpu'),
    'MempathAtomics': ({'atomics', 'full', 'gpu'}, '2h', '+nvgpu'),
    'MempathStream': ({'applications', 'acceptance'}, '20m', '*'),
    'MempathStreamSweep': ({'full', 'applications'}, '2h', '*'),
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
LIMITS = {'2h': 7200.0, '20m': 1200.0}


@pytest.fixture
def every_feature(tmp_path: Path) -> Path:
    """generic.py with a partition that has every feature the checks ask for."""
    return generic_variant(tmp_path / 'generic_all.py', ['gpu', 'nvgpu', 'mpi'])


def test_the_tables_give_the_checks_of_before(every_feature: Path) -> None:
    out = reframe('-C', str(every_feature), '-c', str(CHECKS), '--describe')
    assert out.returncode == 0, out.stdout + out.stderr
    described = json.loads(out.stdout[out.stdout.index('['):out.stdout.rindex(']') + 1])
    got = {d['display_name']: (set(d['tags']), d['time_limit'], d['valid_systems'])
           for d in described}
    assert got == {name: (tags, LIMITS[limit], [BY_FEATURE[systems]])
                   for name, (tags, limit, systems) in CHECKS_BEFORE_TABLES.items()}


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
        'MempathBandwidth %op=read %pu_kind=cpu':
            'bw --all --op read --pu-kind cpu --size 8MiB --pu cpu0 --in-cache '
            '--threads all --kernel grid --output bw.h5',
        'MempathUnifiedMemory': 'um --size 64MiB --reps 3 --output um.h5',
        'MempathAllocatorMatrix': 'allocmatrix --output allocmatrix.h5',
        'MempathMpiBandwidth %ranks_per_node=2': 'bw --max-size 1MiB --ppn 2 --output mpi_bw.h5',
        'MempathNccl': 'nccl --placement device,host,peer --output nccl.h5 --warmup 2',
    }
