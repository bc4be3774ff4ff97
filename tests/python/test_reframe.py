"""ReFrame side: the checks load and list on every site configuration, the summary-line
parsing and the reference tables agree with the naming scheme, and a real local run of
the CPU acceptance check passes and keeps its HDF5 file.

ReFrame exits 0 when a test file fails to load, so listings are judged by their content.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKS = REPO / 'reframe_checks'
CONFIGS = REPO / 'site_configs'
sys.path.insert(0, str(CHECKS))

import mempath_summary  # noqa: E402
import references  # noqa: E402

OPS = ('read', 'write', 'copy')
CPU_KERNELS = ('avx512', 'avx2', 'neon', 'sve', 'scalar')
QUAD_GH200 = REPO / 'tests' / 'fixtures' / 'gh200_quad'


def check_name(op: str, kind: str) -> str:
    return f'MempathBandwidth %op={op} %pu_kind={kind}'


def reframe_exe() -> str:
    local = Path(sys.executable).with_name('reframe')
    found = str(local) if local.exists() else shutil.which('reframe')
    assert found, 'reframe is not installed (pip install -r requirements.txt)'
    return found


def reframe(*args: str, env: dict[str, str] | None = None,
            timeout: int = 120) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    clean.update(env or {})
    return subprocess.run([reframe_exe(), *args], cwd=REPO, env=clean, capture_output=True,
                          text=True, timeout=timeout)


def listed(config: str, *args: str) -> list[str]:
    """Names of the (non-fixture) checks a `reframe -l` lists; fails on load warnings."""
    out = reframe('-C', str(CONFIGS / config), '-c', str(CHECKS), '-l', *args)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert 'skipping test file' not in text, text
    names = re.findall(r'^- (.+?) /[0-9a-f]{8}$', out.stdout, re.MULTILINE)
    found = re.search(r'^Found (\d+) check\(s\)$', out.stdout, re.MULTILINE)
    assert found and int(found[1]) == len(names), text
    return names


def site_configuration(config: str) -> dict:
    return runpy.run_path(str(CONFIGS / config))['site_configuration']


def generic_has_gpu() -> bool:
    parts = site_configuration('generic.py')['systems'][0]['partitions']
    return any('nvgpu' in p.get('features', []) for p in parts)


def mempath_binary() -> Path | None:
    for env, default in (('MEMPATH_CPU_ONLY_BIN', REPO / 'build-cpu' / 'mempath'),
                         ('MEMPATH_BIN', REPO / 'build' / 'mempath')):
        path = Path(os.environ.get(env, default))
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


# ---- listings -----------------------------------------------------------------------

def bandwidth_checks(names: list[str]) -> list[str]:
    """The checks of bandwidth.py (other modules list GPU checks of their own)."""
    return [n for n in names if n.startswith('MempathBandwidth')]


def test_generic_lists_cpu_checks_and_gpu_checks_only_with_a_gpu():
    kinds = ('cpu', 'gpu') if generic_has_gpu() else ('cpu',)
    expected = {check_name(op, kind) for op in OPS for kind in kinds}
    assert sorted(bandwidth_checks(listed('generic.py'))) == sorted(expected)


def test_acceptance_tag_selects_read_and_copy():
    names = listed('generic.py', '--tag', 'acceptance', '--tag', 'cpu')
    assert sorted(names) == sorted([check_name('read', 'cpu'), check_name('copy', 'cpu')])
    full = listed('generic.py', '--tag', 'full', '--tag', 'cpu')
    assert len(full) == len(OPS)


def test_alps_config_lists_gpu_checks_on_gh200():
    names = bandwidth_checks(listed('alps.py', '--system', 'alps:gh200'))
    assert sorted(names) == sorted(check_name(op, k) for op in OPS for k in ('cpu', 'gpu'))


def test_alps_config_shows():
    out = reframe('-C', str(CONFIGS / 'alps.py'), '--system', 'alps:gh200',
                  '--show-config=systems/0/partitions/0')
    assert out.returncode == 0, out.stderr
    part = json.loads(out.stdout[out.stdout.index('{'):])
    assert part['name'] == 'gh200'
    assert {'gpu', 'nvgpu', 'mpi', 'uenv'} <= set(part['features'])
    assert part['processor']['num_cpus'] == 288
    assert part['devices'][0]['num_devices'] == 4


def alps_access(**env: str) -> list[str]:
    """The partition's access options when alps.py loads under these variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith('MEMPATH_ALPS_')}
    code = 'import runpy,sys; print(" ".join(runpy.run_path(sys.argv[1])["_ACCESS"]))'
    out = subprocess.run([sys.executable, '-c', code, str(CONFIGS / 'alps.py')],
                         env={**clean, **env}, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_alps_account_and_partition_come_from_the_environment():
    default = alps_access()
    assert '--partition=normal' in default
    assert not any(a.startswith('--account') for a in default)
    custom = alps_access(MEMPATH_ALPS_ACCOUNT='g42', MEMPATH_ALPS_PARTITION='debug')
    assert {'--account=g42', '--partition=debug'} <= set(custom)


def test_ci_config_lists_cpu_and_mpi_checks_only():
    names = listed('ci.py', '--system', 'ci:cpu')
    bandwidth = [n for n in names if n.startswith('MempathBandwidth')]
    assert sorted(bandwidth) == sorted(check_name(op, 'cpu') for op in OPS)
    others = {n.split(' %')[0] for n in names} - {'MempathBandwidth'}
    assert others == {'MempathChase', 'MempathChaseSweep', 'MempathMpiBandwidth', 'MempathInventory',
                      'MempathStream', 'MempathStreamSweep', 'MempathVetting'}


# ---- summary lines and performance variable names ------------------------------------

SCHEMA_LINES = [  # docs/schema.md, "Summary lines", plus a sweep and a copy
    'MEMPATH bw op=read pu=gpu0 mem=gpu0 dst=- alloc=device kernel=grid threads=270336 '
    'size=1073741824 via=local placement=gpu0 status=ok median_GBps=3012.51 min_GBps=2998.12 '
    'max_GBps=3020.03 reps=10',
    'MEMPATH bw op=read pu=gpu0 mem=numa0 dst=- alloc=system kernel=grid threads=-1 '
    'size=1073741824 via=pcie placement=- status=skipped '
    'reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
    'MEMPATH bw op=read pu=cpu0 mem=numa0 dst=- alloc=numa kernel=sve threads=72 size=1 '
    'via=local placement=numa0:0.75,numa1:0.25 status=ok median_GBps=480.5 min_GBps=1 '
    'max_GBps=2 reps=10',
    'MEMPATH bw op=read pu=cpu0 mem=numa0 dst=- alloc=numa kernel=sve threads=8 size=1 '
    'via=local placement=numa0 status=ok median_GBps=200.0 min_GBps=1 max_GBps=2 reps=10',
    'MEMPATH bw op=copy pu=cpu0 mem=numa0 dst=numa1 alloc=numa kernel=sve threads=72 size=1 '
    'via=interconnect placement=numa0 status=ok median_GBps=90 min_GBps=1 max_GBps=2 reps=10',
    'mempath: 5 cases written to bw.h5',
]


def test_summary_lines_parse_into_perf_variables():
    cases = mempath_summary.parse_bw_lines(SCHEMA_LINES)
    assert len(cases) == 5
    assert cases[1].status == 'skipped' and cases[1].median_GBps is None
    chosen = mempath_summary.perf_cases(cases)
    assert set(chosen) == {'gpu0_gpu0_device_grid', 'cpu0_numa0_numa_sve',
                           'cpu0_numa0_to_numa1_numa_sve'}
    assert chosen['cpu0_numa0_numa_sve'].threads == 72      # largest of the sweep
    assert chosen['cpu0_numa0_numa_sve'].median_GBps == 480.5
    for name in chosen:
        assert mempath_summary.PERF_VAR_RE.fullmatch(name), name


def test_line_pattern_matches_what_sanity_and_extraction_use():
    matching = [line for line in SCHEMA_LINES if re.match(mempath_summary.LINE_PATTERN, line)]
    assert len(matching) == 5


# ---- references ----------------------------------------------------------------------

def defined_partitions() -> set[str]:
    names = set()
    for config in ('generic.py', 'alps.py', 'ci.py'):
        for system in site_configuration(config)['systems']:
            names |= {f"{system['name']}:{p['name']}" for p in system['partitions']}
    return names


def test_references_follow_the_naming_scheme():
    assert set(references.REFERENCES) == set(OPS)
    partitions = defined_partitions()
    for op, table in references.REFERENCES.items():
        for syspart, patterns in table.items():
            assert syspart in partitions, f'{op}: {syspart} is no configured partition'
            for pattern, ref in patterns.items():
                expansions = [pattern.replace('*', k) for k in CPU_KERNELS] \
                    if pattern.endswith('_*') else [pattern]
                assert '*' not in pattern[:-1], pattern
                assert all(mempath_summary.PERF_VAR_RE.fullmatch(e) for e in expansions), \
                    f'{op} {syspart}: {pattern} does not follow the naming scheme'
                value, lower, upper, unit = ref
                assert unit == 'GB/s' and value > 0 and -1 <= lower < 0 < upper, (pattern, ref)


def test_reference_bands_hold_the_published_ranges():
    from reframe.utility import sanity as sn
    from reframe.core.exceptions import SanityError

    for (low, high), ref in (((3700, 3870), references.HOPPER_HBM),
                             ((75, 125), references.PEER_SUPERCHIP),
                             ((440, 500), references.GRACE_LPDDR)):
        value, lower, upper, _ = ref
        for inside in (low, high, (low + high) / 2):
            assert sn.evaluate(sn.assert_reference(inside, value, lower, upper))
        for outside in (low * 0.9, high * 1.1):
            with pytest.raises(SanityError):
                sn.evaluate(sn.assert_reference(outside, value, lower, upper))


def test_resolve_gives_alps_references_per_variable():
    names = ['gpu2_gpu2_device_grid', 'gpu2_numa20_numa_grid', 'gpu1_numa1_pinned_grid',
             'cpu0_numa0_numa_sve', 'cpu3_numa28_numa_sve', 'cpu0_numa12_numa_sve',
             'cpu0_numa1_numa_neon', 'cpus_numa0_numa_sve', 'gpu0_gpu0_device_block']
    table = references.resolve('read', names)['alps:gh200']
    assert table['gpu2_gpu2_device_grid'] == references.HOPPER_HBM
    assert table['gpu2_numa20_numa_grid'] == references.HOPPER_HBM
    assert table['gpu1_numa1_pinned_grid'] == references.HOPPER_C2C_LPDDR
    assert table['cpu0_numa0_numa_sve'] == references.GRACE_LPDDR
    assert table['cpu3_numa28_numa_sve'] == references.GRACE_C2C_HBM
    assert table['cpu0_numa12_numa_sve'] == references.PEER_SUPERCHIP
    assert table['cpu0_numa1_numa_neon'] == references.PEER_SUPERCHIP
    assert 'cpus_numa0_numa_sve' not in table and 'gpu0_gpu0_device_block' not in table
    assert references.resolve('write', names) == {}


def quad_gh200_read_vars(binary: Path) -> set[str]:
    """Performance variable names a quad-GH200 node gives (its topology snapshot), with
    `sve` for the CPU kernel that the binary picks only when it runs."""
    out = subprocess.run([str(binary), 'list', '--from', str(QUAD_GH200), '--op', 'read'],
                         capture_output=True, text=True, check=True)
    names = set()
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) < 6 or 'skipped:' in line:
            continue
        op, pu, mem, dst, alloc, kernel = fields[:6]
        kernel = 'sve' if kernel == '-' else kernel
        dst = '' if dst == '-' else dst
        names.add(mempath_summary.Case(op, pu, mem, dst, alloc, kernel, 0, 'ok', 0.0).perf_var)
    return names


def test_alps_reference_patterns_name_real_quad_gh200_paths():
    binary = mempath_binary()
    if binary is None:
        pytest.skip('no mempath binary built (tests/run_tests.sh builds it)')
    names = quad_gh200_read_vars(binary)
    assert 'gpu3_numa28_numa_grid' in names
    patterns = references.REFERENCES['read']['alps:gh200']
    for pattern in patterns:
        assert fnmatch.filter(names, pattern), f'{pattern} names no quad-GH200 path'
    for name in names:
        hits = [p for p in patterns if fnmatch.fnmatchcase(name, p)]
        assert len(hits) <= 1, f'{name} has several references: {hits}'


# ---- the check's logic with a stand-in binary -------------------------------------------

FAKE_CMAKE = """cmake_minimum_required(VERSION 3.20)
project(fake_mempath NONE)
file(COPY ${CMAKE_CURRENT_SOURCE_DIR}/mempath DESTINATION ${CMAKE_BINARY_DIR})
"""
OK_LINE = ('MEMPATH bw op=read pu=cpu0 mem=numa0 dst=- alloc={alloc} kernel=avx2 '
           'threads={threads} size=8 via=local placement=numa0 status=ok '
           'median_GBps={gbps} min_GBps=1 max_GBps=2 reps=3')


def run_with_fake_mempath(tmp_path: Path, lines: list[str], exit_code: int) -> dict:
    """Runs the CPU read check with a stand-in `mempath` (a script printing `lines`,
    writing an empty bw.h5), built by the real fixture; returns the check's report entry."""
    src = tmp_path / 'fake_src'
    src.mkdir()
    (src / 'CMakeLists.txt').write_text(FAKE_CMAKE)
    script = src / 'mempath'
    body = '\n'.join(lines)
    script.write_text(f"#!/bin/sh\ntouch bw.h5\ncat <<'EOF'\n{body}\nEOF\nexit {exit_code}\n")
    script.chmod(0o755)
    report = tmp_path / 'report.json'
    reframe('-C', str(CONFIGS / 'generic.py'), '-c', str(CHECKS), '-r',
            '-n', 'MempathBandwidth%op=read%pu_kind=cpu',
            '-S', f'MempathBuild.sourcesdir={src}', '--prefix', str(tmp_path / 'rfm'),
            '--report-file', str(report))
    cases = {tc['name']: tc for tc in json.loads(report.read_text())['runs'][0]['testcases']}
    return cases[check_name('read', 'cpu')]


def test_check_reports_the_largest_thread_count_per_path(tmp_path: Path):
    lines = [OK_LINE.format(alloc='numa', threads=1, gbps=10.5),
             OK_LINE.format(alloc='numa', threads=2, gbps=20.25),
             OK_LINE.format(alloc='system', threads=2, gbps=19),
             SCHEMA_LINES[1]]
    case = run_with_fake_mempath(tmp_path, lines, 0)
    assert case['result'] == 'pass', case['fail_reason']
    values = {k.split(':')[-1]: v[0] for k, v in case['perfvalues'].items()}
    assert values == {'cpu0_numa0_numa_avx2': 20.25, 'cpu0_numa0_system_avx2': 19}


@pytest.mark.parametrize('lines, exit_code, reason', [
    ([OK_LINE.format(alloc='numa', threads=2, gbps=1),
      SCHEMA_LINES[2].replace('status=ok', 'status=failed')], 1, 'exited with 1'),
    ([OK_LINE.format(alloc='numa', threads=2, gbps=1),
      SCHEMA_LINES[2].replace('status=ok', 'status=failed')], 0, 'status=failed'),
    ([SCHEMA_LINES[1]], 0, 'no case finished'),
    ([OK_LINE.format(alloc='numa', threads=2, gbps=1), 'MEMPATH bw op=read reason="cut'], 0,
     'unreadable summary line'),
])
def test_check_fails_on_failed_or_missing_cases(tmp_path: Path, lines, exit_code, reason):
    case = run_with_fake_mempath(tmp_path, lines, exit_code)
    assert case['result'] == 'fail'
    assert case['fail_phase'] == 'sanity'
    assert reason in case['fail_reason']


# ---- time limits -----------------------------------------------------------------------

# Every check ReFrame loads, fixtures included (`--describe` leaves those out), on the
# configuration whose partition has every feature (GPU, MPI), so every class is built.
LOAD_ALL = """
import json, sys
import reframe.core.config as config
import reframe.core.runtime as runtime
from reframe.frontend.loader import RegressionCheckLoader
site = config.load_config(sys.argv[1])
site.select_subconfig('alps:gh200')
runtime.init_runtime(site)
print(json.dumps([
    {'name': c.display_name,
     'kind': [k.__name__ for k in type(c).__mro__ if k.__module__.startswith('reframe.core')][0],
     'time_limit': c.time_limit, 'build_time_limit': c.build_time_limit}
    for c in RegressionCheckLoader([sys.argv[2]]).load_all()]))
"""

# The limit that bounds each kind of check's job: compile-only checks have only a build job.
LIMITS_BY_KIND = {'RunOnlyRegressionTest': ('time_limit',),
                  'CompileOnlyRegressionTest': ('build_time_limit',),
                  'RegressionTest': ('time_limit', 'build_time_limit')}


def loaded_checks() -> list[dict]:
    out = subprocess.run([sys.executable, '-c', LOAD_ALL, str(CONFIGS / 'alps.py'), str(CHECKS)],
                         cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if not k.startswith('RFM_')})
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_every_check_and_fixture_has_a_time_limit():
    """Issue 12 (never hang a job): without a limit a hung check holds its node until the
    allocation ends (and with the local scheduler forever)."""
    checks = loaded_checks()
    names = {c['name'].split()[0] for c in checks}
    assert {'MempathBuild', 'NcclTestsBuild', 'MempathBandwidth', 'MempathInventory'} <= names
    unbounded = [f"{c['name']} ({limit})" for c in checks
                 for limit in LIMITS_BY_KIND[c['kind']] if not c[limit]]
    assert not unbounded, f'checks without a time limit: {unbounded}'


def test_a_site_changes_the_time_limit_with_set_var():
    """The limits are class defaults, not set in hooks, so `-S` still wins."""
    out = reframe('-C', str(CONFIGS / 'alps.py'), '--system', 'alps:gh200', '-c', str(CHECKS),
                  '--describe', '-S', 'time_limit=3h')
    assert out.returncode == 0, out.stdout + out.stderr
    limits = {c['name']: c['time_limit'] for c in json.loads(out.stdout)}
    assert limits and set(limits.values()) == {3 * 3600.0}, limits


# ---- a real run ------------------------------------------------------------------------

@pytest.mark.slow
def test_local_run_of_the_cpu_acceptance_check(tmp_path: Path):
    if mempath_binary() is None:
        pytest.skip('mempath does not build here yet (no build/mempath): nothing to run')
    report = tmp_path / 'report.json'
    name = check_name('read', 'cpu')
    out = reframe('-C', str(CONFIGS / 'generic.py'), '-c', str(CHECKS), '-r',
                  '--tag', 'acceptance', '-n', 'MempathBandwidth%op=read%pu_kind=cpu',
                  '-S', 'MempathBandwidth.size=8MiB', '-S', 'MempathBandwidth.in_cache=true',
                  '-S', 'MempathBandwidth.reps=3',
                  '-S', 'MempathBuild.cmake_options=-DMEMPATH_WITH_CUDA=OFF',
                  '--prefix', str(tmp_path), '--report-file', str(report), timeout=900)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    cases = {tc['name']: tc for tc in json.loads(report.read_text())['runs'][0]['testcases']}
    assert cases[name]['result'] == 'pass', text
    assert sum(tc['result'] == 'pass' for tc in cases.values()) == len(cases) == 2, text
    perf = cases[name]['perfvalues']
    assert any(re.fullmatch(r'linux:default:cpu0_numa0_numa_\w+', k) for k in perf), perf
    assert all(v[0] > 0 and v[4] == 'GB/s' for v in perf.values()), perf

    kept = Path(cases[name]['outputdir']) / 'bw.h5'
    assert kept.is_file(), f'bw.h5 not kept in {kept.parent}'
    h5py = pytest.importorskip('h5py')
    with h5py.File(kept, 'r') as f:
        status = [s.decode() if isinstance(s, bytes) else s for s in f['bw/cases/status'][:]]
        assert 'ok' in status and 'failed' not in status
        revision = f.attrs['git_revision']
        revision = revision.decode() if isinstance(revision, bytes) else str(revision)
    if (REPO / '.git').exists():  # the fixture builds a copy of src/: provenance kept
        assert revision != 'unknown'
