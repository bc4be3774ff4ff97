"""ReFrame host<->device transfer checks (reframe_checks/transfers.py): listing on every
site configuration (GPU partitions only), tags, the command lines against the real
`mempath memcpy` planner, the summary-line parser and variable naming, the reference
tables, and the checks themselves run by ReFrame with a stand-in `mempath` on a copy of
the generic configuration that claims a GPU (no GPU is needed for any of this).

ReFrame exits 0 when a test file fails to load, so listings are judged by their content.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKS = REPO / 'reframe_checks'
CONFIGS = REPO / 'site_configs'
FIXTURES = REPO / 'tests' / 'fixtures'
sys.path.insert(0, str(CHECKS))

import mempath_summary  # noqa: E402
import references  # noqa: E402
from test_reframe import generic_variant, gh200_variant  # noqa: E402

ACCEPTANCE = ('MempathTransferBandwidth %coverage=acceptance',
              'MempathTransferLatency %coverage=acceptance')
FULL = ('MempathTransferBandwidth %coverage=full', 'MempathTransferAllGpus',
        'MempathTransferSweep', 'MempathTransferLatency %coverage=full')
ALL = ACCEPTANCE + FULL
ALLOCS = ('pinned', 'registered', 'system', 'managed')


def reframe_exe() -> str:
    local = Path(sys.executable).with_name('reframe')
    found = str(local) if local.exists() else shutil.which('reframe')
    assert found, 'reframe is not installed (pip install -r requirements.txt)'
    return found


def reframe(*args: str, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    return subprocess.run([reframe_exe(), *args], cwd=REPO, env=clean, capture_output=True,
                          text=True, timeout=timeout)


def listed(config: Path, *args: str) -> list[str]:
    """Names of the (non-fixture) checks a `reframe -l` lists; fails on load warnings."""
    out = reframe('-C', str(config), '-c', str(CHECKS), '-l', *args)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert 'skipping test file' not in text, text
    names = re.findall(r'^- (.+?) /[0-9a-f]{8}$', out.stdout, re.MULTILINE)
    found = re.search(r'^Found (\d+) check\(s\)$', out.stdout, re.MULTILINE)
    assert found and int(found[1]) == len(names), text
    return names


def transfer_checks(names: list[str]) -> list[str]:
    return sorted(n for n in names if n.startswith('MempathTransfer'))


def generic_has_gpu() -> bool:
    config = runpy.run_path(str(CONFIGS / 'generic.py'))['site_configuration']
    return any('nvgpu' in p.get('features', []) for p in config['systems'][0]['partitions'])


@pytest.fixture
def gh200_config(tmp_path: Path) -> Path:
    return gh200_variant(tmp_path / 'gh200.py')


@pytest.fixture
def gpu_config(tmp_path: Path) -> Path:
    """generic.py with the features of a GPU partition, whatever this host has."""
    return generic_variant(tmp_path / 'generic_gpu.py', ['gpu', 'nvgpu'])


def mempath_binary() -> Path | None:
    for env, default in (('MEMPATH_BIN', REPO / 'build' / 'mempath'),
                         ('MEMPATH_CPU_ONLY_BIN', REPO / 'build-cpu' / 'mempath')):
        path = Path(os.environ.get(env, default))
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


# ---- listings and tags -------------------------------------------------------------------

def test_generic_lists_transfer_checks_only_with_a_gpu():
    expected = sorted(ALL) if generic_has_gpu() else []
    assert transfer_checks(listed(CONFIGS / 'generic.py')) == expected


def test_ci_config_lists_no_transfer_checks():
    assert transfer_checks(listed(CONFIGS / 'ci.py', '--system', 'ci:cpu')) == []


def test_alps_config_lists_every_transfer_check():
    names = listed(CONFIGS / 'alps.py', '--system', 'daint:normal')
    assert transfer_checks(names) == sorted(ALL)
    assert len(names) == len(set(names))


def test_a_gpu_partition_of_the_generic_config_lists_them(gpu_config: Path):
    assert transfer_checks(listed(gpu_config)) == sorted(ALL)


def test_tags_split_acceptance_from_full():
    alps = (CONFIGS / 'alps.py', '--system', 'daint:normal')
    acceptance = listed(*alps, '--tag', 'acceptance', '--tag', 'transfers')
    assert sorted(acceptance) == sorted(ACCEPTANCE)
    full = listed(*alps, '--tag', 'full', '--tag', 'transfers')
    assert sorted(full) == sorted(FULL)
    assert transfer_checks(listed(*alps, '--tag', 'gpu')) == sorted(ALL)
    # The nightly subset of the whole suite now holds the transfer acceptance checks too.
    assert set(ACCEPTANCE) <= set(listed(*alps, '--tag', 'acceptance'))


# ---- command lines (dry run) against the real planner ---------------------------------------

def dry_run_commands(config: Path, prefix: Path, *args: str) -> dict[str, list[str]]:
    """Check name -> the `mempath` arguments its job script runs (`reframe --dry-run`)."""
    report = prefix / 'report.json'
    out = reframe('-C', str(config), '-c', str(CHECKS / 'transfers.py'), '--dry-run',
                  '--prefix', str(prefix), '--report-file', str(report), *args)
    assert out.returncode == 0, out.stdout + out.stderr
    commands = {}
    for tc in json.loads(report.read_text())['runs'][0]['testcases']:
        if tc['name'].startswith('MempathBuild'):
            continue
        script = Path(tc['stagedir']) / 'rfm_job.sh'
        line = next(l for l in script.read_text().splitlines() if '/mempath memcpy' in l)
        argv = shlex.split(line)
        commands[tc['name']] = argv[argv.index('memcpy'):]
    return commands


def option(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_commands_of_the_checks(gpu_config: Path, tmp_path: Path):
    cmds = dry_run_commands(gpu_config, tmp_path / 'rfm')
    assert sorted(cmds) == sorted(ALL)
    for argv in cmds.values():
        assert option(argv, '--output') == 'memcpy.h5'
    bw = cmds['MempathTransferBandwidth %coverage=acceptance']
    # acceptance: H2D, D2H and bidir (the binary's default directions), CE, per GPU, 1 GiB
    assert (option(bw, '--size'), option(bw, '--gpu'), option(bw, '--engine'),
            option(bw, '--alloc')) == ('1GiB', 'all', 'ce', 'pinned')
    assert option(bw, '--direction') == 'h2d,d2h,bidir' and '--mem' not in bw
    lat = cmds['MempathTransferLatency %coverage=acceptance']
    assert '--latency' in lat and option(lat, '--alloc') == 'pinned'
    assert option(lat, '--direction') == 'h2d,d2h' and '--engine' not in lat
    for name in FULL[:3]:   # host<->device only, whatever the binary's default directions
        assert option(cmds[name], '--direction') == 'h2d,d2h,bidir', name
    full = cmds['MempathTransferBandwidth %coverage=full']
    assert (option(full, '--mem'), option(full, '--alloc'), option(full, '--engine')) == \
        ('all', ','.join(ALLOCS), 'ce,sm')
    sweep = cmds['MempathTransferSweep']
    assert '--sweep' in sweep and '--size' not in sweep
    assert option(sweep, '--alloc') == ','.join(ALLOCS)
    assert '--all-gpus' in cmds['MempathTransferAllGpus']
    assert '--gpu' not in cmds['MempathTransferAllGpus']
    assert option(cmds['MempathTransferLatency %coverage=full'], '--alloc') == ','.join(ALLOCS)


def test_variables_change_the_commands(gpu_config: Path, tmp_path: Path):
    cmds = dry_run_commands(
        gpu_config, tmp_path / 'rfm', '-n', 'MempathTransferBandwidth%coverage=acceptance',
        '-n', 'MempathTransferSweep',
        '-S', 'MempathTransferBandwidth.gpus=gpu1', '-S', 'MempathTransferBandwidth.mems=numa1',
        '-S', 'MempathTransferBandwidth.directions=h2d', '-S', 'MempathTransferBandwidth.reps=3',
        '-S', 'MempathTransferBandwidth.size=64MiB', '-S', 'MempathTransferSweep.max_size=1GiB',
        '-S', 'MempathTransferSweep.engines=ce')
    bw = cmds['MempathTransferBandwidth %coverage=acceptance']
    assert (option(bw, '--gpu'), option(bw, '--mem'), option(bw, '--direction'),
            option(bw, '--reps'), option(bw, '--size')) == ('gpu1', 'numa1', 'h2d', '3', '64MiB')
    sweep = cmds['MempathTransferSweep']
    assert (option(sweep, '--max-size'), option(sweep, '--engine')) == ('1GiB', 'ce')


def planned(binary: Path, argv: list[str], snapshot: str) -> list[mempath_summary.Transfer]:
    """The cases `mempath memcpy ARGV --from SNAPSHOT` plans, as Transfers that finished."""
    out = subprocess.run([str(binary), *argv, '--from', str(FIXTURES / snapshot)],
                         capture_output=True, text=True)
    assert out.returncode == 0, f'{argv}: {out.stderr}'
    cases = []
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) < 7 or 'skipped:' in line:
            continue
        kv = dict(f.split('=', 1) for f in fields if '=' in f)
        mode, alloc, direction, engine = fields[0], *fields[4:7]
        size = kv['size']
        units = {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}
        number, unit = re.fullmatch(r'(\d+)(B|KiB|MiB|GiB)', size).groups()
        cases.append(mempath_summary.Transfer(
            mode=mode, gpu=kv['gpu'], host_numa=int(kv['host_numa']), alloc=alloc,
            direction=direction, engine=engine, size=int(number) * units[unit], status='ok',
            median_GBps=1.0, h2d_median_GBps=1.0, d2h_median_GBps=1.0,
            saturation_bytes=1 << 20, median_us=1.0, p99_us=2.0))
    return cases


@pytest.fixture(scope='module')
def quad_gh200_names(tmp_path_factory) -> dict[str, set[str]]:
    """Check name -> the variables its command gives on a quad GH200 (topology fixture)."""
    binary = mempath_binary()
    if binary is None:
        pytest.skip('no mempath binary built (tests/run_tests.sh builds it)')
    tmp = tmp_path_factory.mktemp('transfers')
    config = generic_variant(tmp / 'generic_gpu.py', ['gpu', 'nvgpu'])
    kinds = {'MempathTransferSweep': 'sweep', 'MempathTransferLatency': 'latency'}
    names = {}
    for check, argv in dry_run_commands(config, tmp / 'rfm').items():
        argv = [a for a in argv if a not in ('--output', 'memcpy.h5')]
        kind = kinds.get(check.split()[0], 'bandwidth')
        sizes = [4] if check == 'MempathTransferLatency %coverage=acceptance' else None
        names[check] = set(mempath_summary.transfer_perf_values(
            planned(binary, argv, 'gh200_quad'), kind, sizes))
    return names


def test_commands_plan_on_a_quad_gh200(quad_gh200_names: dict[str, set[str]]):
    acceptance = quad_gh200_names['MempathTransferBandwidth %coverage=acceptance']
    assert acceptance == {f'gpu{g}_numa{g}_{d}_ce_pinned' for g in range(4)
                          for d in ('h2d', 'd2h', 'bidir', 'bidir_h2d', 'bidir_d2h')}
    latency = quad_gh200_names['MempathTransferLatency %coverage=acceptance']
    assert latency == {f'gpu{g}_numa{g}_{d}_ce_pinned_lat4B{p}' for g in range(4)
                       for d in ('h2d', 'd2h') for p in ('', '_p99')}
    full = quad_gh200_names['MempathTransferBandwidth %coverage=full']
    assert acceptance < full and 'gpu0_numa3_d2h_sm_managed' in full
    assert 'gpus_numas_bidir_ce_pinned' in quad_gh200_names['MempathTransferAllGpus']
    sweep = quad_gh200_names['MempathTransferSweep']
    assert {'gpu2_numa2_h2d_ce_pinned_peak', 'gpu2_numa2_h2d_ce_pinned_sat'} <= sweep
    lat_full = quad_gh200_names['MempathTransferLatency %coverage=full']
    assert {'gpu1_numa1_d2h_ce_managed_lat1MiB', 'gpu1_numa1_h2d_ce_system_lat512KiB_p99'} \
        <= lat_full
    for names in quad_gh200_names.values():
        for name in names:
            assert mempath_summary.TRANSFER_VAR_RE.fullmatch(name), name


def test_alps_reference_patterns_name_real_quad_gh200_variables(
        quad_gh200_names: dict[str, set[str]]):
    every = set().union(*quad_gh200_names.values())
    patterns = references.TRANSFER_REFERENCES[references.GH200]
    for pattern in patterns:
        assert fnmatch.filter(every, pattern), f'{pattern} names no quad-GH200 variable'
    for name in every:
        hits = [p for p in patterns if fnmatch.fnmatchcase(name, p)]
        assert len(hits) <= 1, f'{name} has several references: {hits}'
    # The acceptance variables of the copy engine one way have references; bidir none yet.
    resolved = references.resolve_transfers(
        quad_gh200_names['MempathTransferBandwidth %coverage=acceptance'])[references.GH200]
    assert set(resolved) == {f'gpu{g}_numa{g}_{d}_ce_pinned' for g in range(4)
                             for d in ('h2d', 'd2h')}


# ---- summary lines and naming -----------------------------------------------------------

SCHEMA_LINES = [  # docs/schema.md, "/memcpy summary lines"
    'MEMPATH memcpy mode=bandwidth gpu=0 host_numa=0 cpu_numa=0 alloc=pinned direction=bidir '
    'engine=ce size=536870912 via=pcie timing=events placement=numa0 status=ok '
    'median_GBps=101.22 min_GBps=100.87 max_GBps=101.40 h2d_median_GBps=50.61 '
    'd2h_median_GBps=50.60 saturation_bytes=-1 reps=10',
    'MEMPATH memcpy mode=latency gpu=0 host_numa=0 cpu_numa=0 alloc=pinned direction=h2d '
    'engine=ce size=4 via=pcie timing=host placement=numa0 status=ok median_us=9.812 '
    'p99_us=12.400 min_us=9.402 max_us=30.118 reps=1000',
    'MEMPATH memcpy mode=bandwidth gpu=0 host_numa=0 cpu_numa=0 alloc=system direction=h2d '
    'engine=sm size=536870912 via=pcie timing=host placement=- status=skipped '
    'reason="GPU 0 cannot access pageable memory (no ATS/HMM): an SM copy needs it, a '
    'copy-engine copy (--engine ce) does not"',
]


def bw_line(gpu='0', numa=0, alloc='pinned', direction='h2d', engine='ce', size=1 << 30,
            status='ok', gbps=50.0, sat=-1) -> str:
    line = (f'MEMPATH memcpy mode=bandwidth gpu={gpu} host_numa={numa} cpu_numa=0 '
            f'alloc={alloc} direction={direction} engine={engine} size={size} via=pcie '
            f'timing=events placement=numa0 status={status}')
    if status != 'ok':
        return line + ' reason="it broke"'
    line += f' median_GBps={gbps} min_GBps={gbps - 1} max_GBps={gbps + 1}'
    if direction == 'bidir':
        line += f' h2d_median_GBps={gbps / 2 + 1} d2h_median_GBps={gbps / 2 - 1}'
    return line + f' saturation_bytes={sat} reps=10'


def lat_line(size: int, direction='h2d', us=9.5, alloc='pinned') -> str:
    return (f'MEMPATH memcpy mode=latency gpu=0 host_numa=0 cpu_numa=0 alloc={alloc} '
            f'direction={direction} engine=ce size={size} via=pcie timing=host '
            f'placement=numa0 status=ok median_us={us} p99_us={us * 2} min_us=1 max_us=99 '
            'reps=1000')


def test_schema_lines_parse():
    t = mempath_summary.parse_memcpy_lines(SCHEMA_LINES + ['mempath: 3 cases written',
                                                           'MEMPATH bw op=read x=1 status=ok'])
    assert [x.status for x in t] == ['ok', 'ok', 'skipped']
    assert (t[0].median_GBps, t[0].h2d_median_GBps, t[0].d2h_median_GBps) == \
        (101.22, 50.61, 50.60)
    assert (t[1].mode, t[1].size, t[1].median_us, t[1].p99_us) == ('latency', 4, 9.812, 12.4)
    assert t[2].median_GBps is None
    assert all(re.match(mempath_summary.LINE_PATTERN, line) for line in SCHEMA_LINES)
    assert mempath_summary.parse_bw_lines(SCHEMA_LINES) == []


def test_bandwidth_variables():
    lines = SCHEMA_LINES + [bw_line(), bw_line(direction='d2h', gbps=40),
                            bw_line(numa=1, engine='sm', alloc='registered', gbps=30),
                            bw_line(gpu='all', numa=-1, gbps=200), bw_line(gpu='all', numa=2),
                            bw_line(direction='d2h', status='failed')]
    values = mempath_summary.transfer_perf_values(
        mempath_summary.parse_memcpy_lines(lines), 'bandwidth')
    assert values == {
        'gpu0_numa0_bidir_ce_pinned': (101.22, 'GB/s'),
        'gpu0_numa0_bidir_h2d_ce_pinned': (50.61, 'GB/s'),
        'gpu0_numa0_bidir_d2h_ce_pinned': (50.60, 'GB/s'),
        'gpu0_numa0_h2d_ce_pinned': (50.0, 'GB/s'),
        'gpu0_numa0_d2h_ce_pinned': (40.0, 'GB/s'),
        'gpu0_numa1_h2d_sm_registered': (30.0, 'GB/s'),
        'gpus_numas_h2d_ce_pinned': (200.0, 'GB/s'),
        'gpus_numa2_h2d_ce_pinned': (50.0, 'GB/s'),
    }
    assert all(mempath_summary.TRANSFER_VAR_RE.fullmatch(n) for n in values)


def test_sweep_variables_are_the_peak_and_the_saturation_size():
    lines = [bw_line(size=4096 << i, gbps=g, sat=1 << 20)
             for i, g in enumerate((5.0, 20.0, 48.0, 51.0, 50.5))]
    lines += [bw_line(direction='d2h', size=4096, gbps=3.0, sat=-1),
              bw_line(direction='d2h', size=8192, status='skipped')]
    values = mempath_summary.transfer_perf_values(
        mempath_summary.parse_memcpy_lines(lines), 'sweep')
    assert values == {'gpu0_numa0_h2d_ce_pinned_peak': (51.0, 'GB/s'),
                      'gpu0_numa0_h2d_ce_pinned_sat': (1.0, 'MiB'),
                      'gpu0_numa0_d2h_ce_pinned_peak': (3.0, 'GB/s')}


def test_latency_variables_per_size():
    lines = [lat_line(4), lat_line(4, 'd2h', 11.0), lat_line(1024, us=12.0),
             lat_line(1 << 20, us=40.0), bw_line()]
    cases = mempath_summary.parse_memcpy_lines(lines)
    only4 = mempath_summary.transfer_perf_values(cases, 'latency', [4])
    assert only4 == {'gpu0_numa0_h2d_ce_pinned_lat4B': (9.5, 'us'),
                     'gpu0_numa0_h2d_ce_pinned_lat4B_p99': (19.0, 'us'),
                     'gpu0_numa0_d2h_ce_pinned_lat4B': (11.0, 'us'),
                     'gpu0_numa0_d2h_ce_pinned_lat4B_p99': (22.0, 'us')}
    every = mempath_summary.transfer_perf_values(cases, 'latency')
    assert every['gpu0_numa0_h2d_ce_pinned_lat1KiB'] == (12.0, 'us')
    assert every['gpu0_numa0_h2d_ce_pinned_lat1MiB_p99'] == (80.0, 'us')
    assert len(every) == 8
    assert all(mempath_summary.TRANSFER_VAR_RE.fullmatch(n) for n in every)
    with pytest.raises(ValueError):
        mempath_summary.transfer_perf_values(cases, 'chase')


@pytest.mark.parametrize('size, label', [(4, '4B'), (512, '512B'), (1024, '1KiB'),
                                         (1 << 20, '1MiB'), (3 << 30, '3GiB'), (1536, '1536B')])
def test_size_labels(size: int, label: str):
    assert mempath_summary.size_label(size) == label


def test_transfer_names_do_not_collide_with_bandwidth_names():
    names = ['gpu0_numa0_h2d_ce_pinned', 'gpus_numas_bidir_d2h_sm_managed_peak']
    assert all(not mempath_summary.PERF_VAR_RE.fullmatch(n) for n in names)
    assert not mempath_summary.TRANSFER_VAR_RE.fullmatch('gpu0_gpu0_device_grid')


# ---- references --------------------------------------------------------------------------

def defined_partitions() -> set[str]:
    names = set()
    for config in ('generic.py', 'alps.py', 'ci.py'):
        for system in runpy.run_path(str(CONFIGS / config))['site_configuration']['systems']:
            names |= {f"{system['name']}:{p['name']}" for p in system['partitions']}
    return names


def test_transfer_references_follow_the_naming_scheme():
    partitions = defined_partitions()
    assert references.TRANSFER_REFERENCES, 'no transfer references at all'
    for key, patterns in references.TRANSFER_REFERENCES.items():
        assert isinstance(key, references.Arch) or key in partitions, \
            f'{key} is no configured partition'
        for pattern, ref in patterns.items():
            assert mempath_summary.TRANSFER_VAR_RE.fullmatch(pattern), pattern
            value, lower, upper, unit = ref
            metric = mempath_summary.TRANSFER_VAR_RE.fullmatch(pattern)['metric'] or ''
            expected = 'us' if metric.startswith('lat') else 'MiB' if metric == 'sat' \
                else 'GB/s'
            # Bandwidths are floors (no upper bound).
            assert unit == expected and value > 0 and -1 <= lower < 0, (pattern, ref)
            assert upper is None or unit != 'GB/s', (pattern, ref)
    # The bandwidth references stay apart: their table is unchanged in shape.
    assert set(references.REFERENCES) == {'read', 'write', 'copy'}


def test_seed_bands_hold_the_published_gh200_figures_widely():
    from reframe.core.exceptions import SanityError
    from reframe.utility import sanity as sn

    for (low, high), ref in (((377, 420), references.GH200_H2D_C2C),
                             ((297, 297), references.GH200_D2H_C2C),
                             ((133, 133), references.GH200_REMOTE_SOCKET)):
        value, lower, upper, _ = ref
        # Seeds: at least 20 % below; floors: anything faster passes.
        for inside in (low, high, low * 0.8, high * 1.2, high * 2):
            assert sn.evaluate(sn.assert_reference(inside, value, lower, upper))
        for outside in (low * 0.5,):
            with pytest.raises(SanityError):
                sn.evaluate(sn.assert_reference(outside, value, lower, upper))


def test_resolve_transfers_on_alps():
    names = ['gpu2_numa2_h2d_ce_pinned', 'gpu2_numa2_d2h_ce_registered',
             'gpu2_numa0_h2d_ce_pinned', 'gpu0_numa3_d2h_ce_pinned',
             'gpu0_numa3_d2h_ce_pinned_peak',
             'gpu1_numa1_h2d_ce_pinned_peak', 'gpu1_numa1_h2d_ce_pinned_sat',
             'gpu0_numa0_h2d_sm_pinned', 'gpu0_numa0_h2d_ce_system',
             'gpu0_numa0_bidir_ce_pinned', 'gpu0_numa0_h2d_ce_pinned_lat4B']
    table = references.resolve_transfers(names)[references.GH200]
    assert table == {
        'gpu2_numa2_h2d_ce_pinned': references.GH200_H2D_C2C,
        'gpu2_numa2_d2h_ce_registered': references.GH200_D2H_C2C,
        'gpu2_numa0_h2d_ce_pinned': references.GH200_REMOTE_SOCKET,
        'gpu0_numa3_d2h_ce_pinned': references.GH200_REMOTE_SOCKET,
        'gpu1_numa1_h2d_ce_pinned_peak': references.GH200_H2D_C2C,
    }
    assert references.resolve_transfers(['gpu0_gpu0_device_grid']) == {}


# ---- the checks' logic with a stand-in binary ---------------------------------------------

FAKE_CMAKE = """cmake_minimum_required(VERSION 3.20)
project(fake_mempath NONE)
file(COPY ${CMAKE_CURRENT_SOURCE_DIR}/mempath DESTINATION ${CMAKE_BINARY_DIR})
"""


def fake_mempath(src: Path, bandwidth: list[str], sweep: list[str], latency: list[str],
                 exit_code: int = 0, write_h5: bool = True) -> None:
    """A stand-in `mempath` printing the lines of the mode its arguments ask for."""
    src.mkdir()
    (src / 'CMakeLists.txt').write_text(FAKE_CMAKE)

    def block(lines: list[str]) -> str:
        return "cat <<'EOF'\n" + '\n'.join(lines) + '\nEOF\n'

    script = src / 'mempath'
    script.write_text(
        '#!/bin/sh\n' + ('touch memcpy.h5\n' if write_h5 else '')
        + 'case " $* " in\n'
        + f'  *" --sweep "*) {block(sweep)};;\n'
        + f'  *" --latency "*) {block(latency)};;\n'
        + f'  *) {block(bandwidth)};;\nesac\n'
        + 'echo "mempath: cases written to memcpy.h5" >&2\n'
        + f'exit {exit_code}\n')
    script.chmod(0o755)


def run_checks(tmp_path: Path, config: Path, *names: str) -> dict[str, dict]:
    report = tmp_path / 'report.json'
    args = [a for n in names for a in ('-n', n)]
    out = reframe('-C', str(config), '-c', str(CHECKS / 'transfers.py'), '-r', *args,
                  '-S', f'MempathBuild.sourcesdir={tmp_path / "fake_src"}',
                  '--prefix', str(tmp_path / 'rfm'), '--report-file', str(report))
    assert report.is_file(), out.stdout + out.stderr
    return {tc['name']: tc for tc in json.loads(report.read_text())['runs'][0]['testcases']}


def perf(case: dict) -> dict[str, tuple[float, str]]:
    return {k.split(':')[-1]: (v[0], v[4]) for k, v in case['perfvalues'].items()}


def test_checks_report_their_variables_and_keep_the_hdf5(tmp_path: Path, gpu_config: Path):
    bandwidth = [bw_line(), bw_line(direction='d2h', gbps=45.5),
                 bw_line(direction='bidir', gbps=90.0), SCHEMA_LINES[2]]
    sweep = [bw_line(size=4096, gbps=2.0, sat=1 << 23), bw_line(size=1 << 23, gbps=49.0,
                                                                 sat=1 << 23)]
    latency = [lat_line(4), lat_line(4, 'd2h', 10.25), lat_line(8, us=9.75)]
    fake_mempath(tmp_path / 'fake_src', bandwidth, sweep, latency)
    cases = run_checks(tmp_path, gpu_config, 'MempathTransferBandwidth%coverage=acceptance',
                       'MempathTransferLatency%coverage=acceptance', 'MempathTransferSweep')
    for name in ('MempathTransferBandwidth %coverage=acceptance', 'MempathTransferSweep',
                 'MempathTransferLatency %coverage=acceptance'):
        assert cases[name]['result'] == 'pass', cases[name]['fail_reason']
        kept = Path(cases[name]['outputdir'])
        assert (kept / 'memcpy.h5').is_file(), f'memcpy.h5 not kept in {kept}'
    assert perf(cases['MempathTransferBandwidth %coverage=acceptance']) == {
        'gpu0_numa0_h2d_ce_pinned': (50.0, 'GB/s'),
        'gpu0_numa0_d2h_ce_pinned': (45.5, 'GB/s'),
        'gpu0_numa0_bidir_ce_pinned': (90.0, 'GB/s'),
        'gpu0_numa0_bidir_h2d_ce_pinned': (46.0, 'GB/s'),
        'gpu0_numa0_bidir_d2h_ce_pinned': (44.0, 'GB/s'),
    }
    assert perf(cases['MempathTransferSweep']) == {
        'gpu0_numa0_h2d_ce_pinned_peak': (49.0, 'GB/s'),
        'gpu0_numa0_h2d_ce_pinned_sat': (8.0, 'MiB'),
    }
    assert perf(cases['MempathTransferLatency %coverage=acceptance']) == {  # 4 B only
        'gpu0_numa0_h2d_ce_pinned_lat4B': (9.5, 'us'),
        'gpu0_numa0_h2d_ce_pinned_lat4B_p99': (19.0, 'us'),
        'gpu0_numa0_d2h_ce_pinned_lat4B': (10.25, 'us'),
        'gpu0_numa0_d2h_ce_pinned_lat4B_p99': (20.5, 'us'),
    }


@pytest.mark.parametrize('lines, exit_code, write_h5, reason', [
    ([bw_line(), bw_line(direction='d2h', status='failed')], 1, True, 'exited with 1'),
    ([bw_line(), bw_line(direction='d2h', status='failed')], 0, True, 'status=failed'),
    ([SCHEMA_LINES[2]], 0, True, 'no case finished'),
    ([], 2, True, 'exited with 2'),
    ([bw_line()], 0, False, 'memcpy.h5 was not written'),
])
def test_check_fails_on_failed_or_missing_cases(tmp_path: Path, gpu_config: Path, lines,
                                                exit_code, write_h5, reason):
    fake_mempath(tmp_path / 'fake_src', lines, [], [], exit_code, write_h5)
    name = 'MempathTransferBandwidth %coverage=acceptance'
    case = run_checks(tmp_path, gpu_config, 'MempathTransferBandwidth%coverage=acceptance')[name]
    assert case['result'] == 'fail'
    assert case['fail_phase'] == 'sanity'
    assert reason in case['fail_reason']


@pytest.mark.parametrize('h2d, result', [(398.0, 'pass'), (50.0, 'fail')])
def test_alps_references_judge_the_variables(tmp_path: Path, gh200_config: Path,
                                             h2d: float, result: str):
    lines = [bw_line(gpu='1', numa=1, gbps=h2d), bw_line(gpu='1', numa=1, direction='d2h',
                                                          gbps=300.0),
             bw_line(gpu='1', numa=1, direction='bidir', gbps=1.0)]   # no reference: any
    fake_mempath(tmp_path / 'fake_src', lines, [], [])
    name = 'MempathTransferBandwidth %coverage=acceptance'
    case = run_checks(tmp_path, gh200_config,
                      'MempathTransferBandwidth%coverage=acceptance')[name]
    assert case['result'] == result, case['fail_reason']
    refs = {k.split(':')[-1]: v[1] for k, v in case['perfvalues'].items()}
    assert refs['gpu1_numa1_h2d_ce_pinned'] == references.GH200_H2D_C2C[0]
    assert refs['gpu1_numa1_d2h_ce_pinned'] == references.GH200_D2H_C2C[0]
    assert refs['gpu1_numa1_bidir_ce_pinned'] == 0
    if result == 'fail':
        assert case['fail_phase'] == 'performance'
        assert 'gpu1_numa1_h2d_ce_pinned' in case['fail_reason']
