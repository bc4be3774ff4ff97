"""ReFrame host<->device transfer checks (reframe_checks/transfers.py): listing on every
site configuration (GPU partitions only), tags, the command lines against the real
`mempath memcpy` planner, the summary-line parser and the class variables (one per links,
direction, engine and allocator: the weakest GPU of it), the reference tables (keyed by
class), and the checks themselves run by ReFrame with a stand-in `mempath` on a copy of the
generic configuration that claims a GPU (no GPU is needed for any of this).

ReFrame exits 0 when a test file fails to load, so listings are judged by their content.

ReFrame exits 0 when a test file fails to load, so listings are judged by their content.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import runpy
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKS = REPO / 'reframe_checks'
CONFIGS = REPO / 'site_configs'
FIXTURES = REPO / 'tests' / 'fixtures'

import mempath_summary  # noqa: E402
import references  # noqa: E402
import transfers  # noqa: E402
from conftest import planned_summary_lines  # noqa: E402
from test_reframe import generic_variant, gh200_variant  # noqa: E402
from test_reframe import listing, reframe as run_reframe  # noqa: E402

ACCEPTANCE = ('MempathTransferBandwidth %coverage=acceptance',
              'MempathTransferLatency %coverage=acceptance')
FULL = ('MempathTransferBandwidth %coverage=full', 'MempathTransferSmBandwidth',
        'MempathTransferAllGpus', 'MempathTransferSweep', 'MempathTransferLatency %coverage=full')
ALL = ACCEPTANCE + FULL
ALLOCS = ('pinned', 'registered', 'system', 'managed')
DIRECTIONS = ('h2d', 'd2h', 'bidir')
#: The links between a quad GH200's Grace nodes and a GPU: its own (C2C), any other's.
# A GPU's own Grace over C2C; another superchip's LPDDR over NVLink, then that one's C2C.
QUAD_VIAS = ('c2c', 'nvlink_c2c')


def reframe(*args: str, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    return run_reframe(*args, timeout=timeout)


def listed(config: Path, *args: str) -> list[str]:
    """Names of the (non-fixture) checks a `reframe -l` lists; fails on load warnings."""
    out = listing(config, *args, timeout=180)
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
    for name in FULL[:4]:   # host<->device only, whatever the binary's default directions
        assert option(cmds[name], '--direction') == 'h2d,d2h,bidir', name
    full = cmds['MempathTransferBandwidth %coverage=full']
    assert (option(full, '--mem'), option(full, '--alloc'), option(full, '--engine')) == \
        ('all', ','.join(ALLOCS), 'ce')
    sm = cmds['MempathTransferSmBandwidth']     # the same cases, SM copy kernels
    assert (option(sm, '--gpu'), option(sm, '--mem'), option(sm, '--alloc'), option(sm, '--engine'),
            option(sm, '--size')) == ('all', 'all', ','.join(ALLOCS), 'sm', '1GiB')
    sweep = cmds['MempathTransferSweep']
    assert '--sweep' in sweep and '--size' not in sweep
    assert option(sweep, '--alloc') == ','.join(ALLOCS)
    assert '--all-gpus' in cmds['MempathTransferAllGpus']
    assert '--gpu' not in cmds['MempathTransferAllGpus']
    assert option(cmds['MempathTransferLatency %coverage=full'], '--alloc') == ','.join(ALLOCS)
    # Each list option is the check's DEFAULTS for its coverage, absent where it has none.
    for name, argv in cmds.items():
        defaults = check_class(name).DEFAULTS[coverage(name)]
        for flag, variable in transfers.LIST_OPTIONS:
            assert option(argv, flag) == (defaults.get(variable) or None), (name, flag)


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


def check_class(name: str) -> type:
    """The check class of a check name (`MempathTransferLatency %coverage=full` -> its class)."""
    return getattr(transfers, name.split()[0])


def coverage(name: str) -> str:
    return 'acceptance' if name in ACCEPTANCE else 'full'


class CheckValues:
    """What a transfer check's `perf_values` reads of the check (its kind, coverage and
    `report_sizes`, unset unless given), with that very method: the variables the check
    reports of summary lines, without ReFrame running it."""

    perf_values = transfers.MempathTransferBase.perf_values
    latency_sizes = transfers.MempathTransferBase.latency_sizes

    def __init__(self, name: str, report_sizes: list[int] | None = None):
        self.kind = check_class(name).kind
        self.scope = coverage(name)
        self.report_sizes = report_sizes


def planned_names(tmp: Path, fixture: str) -> dict[str, set[str]]:
    """Check name -> the variables its default command (the check's DEFAULTS, as the dry
    run writes it) gives on the node of a topology fixture, every planned case finished
    with made-up figures (conftest.planned_summary_lines: the classes here are every
    planned one, the most a run can report)."""
    binary = mempath_binary()
    if binary is None:
        pytest.skip('no mempath binary built (tests/run_tests.sh builds it)')
    config = generic_variant(tmp / 'generic_gpu.py', ['gpu', 'nvgpu'])
    names = {}
    for check, argv in dry_run_commands(config, tmp / 'rfm').items():
        argv = [a for a in argv if a not in ('--output', 'memcpy.h5')]
        lines = planned_summary_lines(binary, FIXTURES / fixture, *argv)
        assert lines, f'{check}: nothing planned'
        names[check] = set(CheckValues(check).perf_values(
            mempath_summary.parse_lines(lines, 'memcpy')))
    return names


@pytest.fixture(scope='module')
def quad_gh200_names(tmp_path_factory) -> dict[str, set[str]]:
    return planned_names(tmp_path_factory.mktemp('transfers'), 'gh200_quad')


@pytest.fixture(scope='module')
def dual_gh200_names(tmp_path_factory) -> dict[str, set[str]]:
    return planned_names(tmp_path_factory.mktemp('transfers_dual'), 'gh200_dual')


#: Allocators whose copies the copy engines cannot queue (no bidir, no --all-gpus).
PAGEABLE = ('system', 'managed')


def classes(gpu: str, vias, directions, engines, allocs, tail: str = '') -> set[str]:
    """Every class variable `{gpu}_numa_{via}_{direction}_{engine}_{alloc}{tail}`."""
    return {f'{gpu}_numa_{v}_{d}_{e}_{a}{tail}' for v in vias for d in directions
            for e in engines for a in allocs}


def test_commands_plan_on_a_quad_gh200(quad_gh200_names: dict[str, set[str]]):
    assert sorted(quad_gh200_names) == sorted(ALL)
    # Acceptance: four GPUs, each on its own Grace node over C2C, make one class per
    # direction; the two directions of a bidir case are classes of their own here only.
    acceptance = quad_gh200_names['MempathTransferBandwidth %coverage=acceptance']
    assert acceptance == classes('gpu', ['c2c'], ('h2d', 'd2h', 'bidir', 'bidir_h2d',
                                                  'bidir_d2h'), ['ce'], ['pinned'], '_min')
    # Latency at 4 B only, by default, in both coverages (every size stays in memcpy.h5).
    latency = quad_gh200_names['MempathTransferLatency %coverage=acceptance']
    assert latency == classes('gpu', ['c2c'], ('h2d', 'd2h'), ['ce'], ['pinned'],
                              '_lat4B_max') | classes('gpu', ['c2c'], ('h2d', 'd2h'), ['ce'],
                                                      ['pinned'], '_lat4B_p99_max')
    lat_full = quad_gh200_names['MempathTransferLatency %coverage=full']
    assert lat_full == classes('gpu', ['c2c'], ('h2d', 'd2h'), ['ce'], ALLOCS, '_lat4B_max') \
        | classes('gpu', ['c2c'], ('h2d', 'd2h'), ['ce'], ALLOCS, '_lat4B_p99_max')
    # Full: every node of every GPU (own C2C, or C2C and the socket fabric), no bidir parts.
    # Copy-engine bidir needs page-locked memory: system and managed skip it (no class).
    full = quad_gh200_names['MempathTransferBandwidth %coverage=full']
    assert full == classes('gpu', QUAD_VIAS, DIRECTIONS, ['ce'], ALLOCS, '_min') \
        - classes('gpu', QUAD_VIAS, ['bidir'], ['ce'], PAGEABLE, '_min')
    assert quad_gh200_names['MempathTransferSmBandwidth'] == \
        classes('gpu', QUAD_VIAS, DIRECTIONS, ['sm'], ALLOCS, '_min')
    assert acceptance - full == {'gpu_numa_c2c_bidir_h2d_ce_pinned_min',
                                 'gpu_numa_c2c_bidir_d2h_ce_pinned_min'}
    # Every GPU at once, each with its nearest node.
    # (--all-gpus queues copies on every GPU at once: page-locked memory for the engines.)
    assert quad_gh200_names['MempathTransferAllGpus'] == \
        classes('gpus', ['c2c'], DIRECTIONS, ('ce', 'sm'), ALLOCS, '_min') \
        - classes('gpus', ['c2c'], DIRECTIONS, ['ce'], PAGEABLE, '_min')
    # The sweep: each class's slowest peak only (the saturation sizes stay in memcpy.h5).
    assert quad_gh200_names['MempathTransferSweep'] == \
        classes('gpu', ['c2c'], DIRECTIONS, ('ce', 'sm'), ALLOCS, '_peak_min') \
        - classes('gpu', ['c2c'], ['bidir'], ['ce'], PAGEABLE, '_peak_min')
    for names in quad_gh200_names.values():
        for name in names:
            assert mempath_summary.TRANSFER_VAR_RE.fullmatch(name), name


def test_quad_gh200_checks_report_few_variables(quad_gh200_names: dict[str, set[str]]):
    """Every transfer check at most MAX_PERF_VARS on a quad GH200: the full one-size
    bandwidth is split by engine (together: 2 links x 3 directions x 2 engines x 4
    allocators, less copy-engine bidir of system and managed memory = 44)."""
    for check, names in quad_gh200_names.items():
        assert 0 < len(names) <= mempath_summary.MAX_PERF_VARS, (check, sorted(names))
    full = ('MempathTransferBandwidth %coverage=full', 'MempathTransferSmBandwidth')
    assert [len(quad_gh200_names[name]) for name in full] == [20, 24]


def test_alps_reference_patterns_name_real_quad_gh200_variables(
        quad_gh200_names: dict[str, set[str]], dual_gh200_names: dict[str, set[str]]):
    every = set().union(*quad_gh200_names.values())
    # GH200 references hold for any GH200 node: the dual workstation's cross-superchip
    # class (c2c_interconnect, no GPU peer access) is one the quad node does not have.
    dual = set().union(*dual_gh200_names.values())
    patterns = references.TRANSFER_REFERENCES[references.GH200]
    assert patterns == references._gh200_transfers()
    for pattern in patterns:
        assert fnmatch.filter(every | dual, pattern), f'{pattern} names no GH200 variable'
    for name in every:
        hits = [p for p in patterns if fnmatch.fnmatchcase(name, p)]
        assert len(hits) <= 1, f'{name} has several references: {hits}'
    # The acceptance classes of the copy engine one way have references; bidir none yet.
    resolved = references.resolve_transfers(
        quad_gh200_names['MempathTransferBandwidth %coverage=acceptance'])[references.GH200]
    assert resolved == {'gpu_numa_c2c_h2d_ce_pinned_min': references.GH200_H2D_C2C,
                        'gpu_numa_c2c_d2h_ce_pinned_min': references.GH200_D2H_C2C}
    # Full: page-locked memory by the copy engine to the own node; another superchip's
    # (nvlink_c2c) has no published figure yet. The dual workstation's other node has one.
    resolved = references.resolve_transfers(
        quad_gh200_names['MempathTransferBandwidth %coverage=full'])[references.GH200]
    assert set(resolved) == classes('gpu', ['c2c'], ('h2d', 'd2h'), ['ce'],
                                    references.PAGE_LOCKED, '_min')
    resolved = references.resolve_transfers(
        dual_gh200_names['MempathTransferBandwidth %coverage=full'])[references.GH200]
    assert set(resolved) == classes('gpu', ['c2c', 'c2c_interconnect'], ('h2d', 'd2h'), ['ce'],
                                    references.PAGE_LOCKED, '_min')
    # The sweep (nearest node only): the peaks of the same classes.
    resolved = references.resolve_transfers(
        quad_gh200_names['MempathTransferSweep'])[references.GH200]
    assert resolved == {
        **{f'gpu_numa_c2c_h2d_ce_{a}_peak_min': references.GH200_H2D_C2C
           for a in references.PAGE_LOCKED},
        **{f'gpu_numa_c2c_d2h_ce_{a}_peak_min': references.GH200_D2H_C2C
           for a in references.PAGE_LOCKED}}


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
            status='ok', gbps=50.0, sat=-1, via='c2c', h2d=None, d2h=None) -> str:
    """A `mempath memcpy` bandwidth line; a bidir one's directions are gbps / 2 +- 1 unless
    given (h2d, d2h)."""
    line = (f'MEMPATH memcpy mode=bandwidth gpu={gpu} host_numa={numa} cpu_numa=0 '
            f'alloc={alloc} direction={direction} engine={engine} size={size} via={via} '
            f'timing=events placement=numa0 status={status}')
    if status != 'ok':
        return line + ' reason="it broke"'
    line += f' median_GBps={gbps} min_GBps={gbps - 1} max_GBps={gbps + 1}'
    if direction == 'bidir':
        h2d = gbps / 2 + 1 if h2d is None else h2d
        d2h = gbps / 2 - 1 if d2h is None else d2h
        line += f' h2d_median_GBps={h2d} d2h_median_GBps={d2h}'
    return line + f' saturation_bytes={sat} reps=10'


def lat_line(size: int, direction='h2d', us=9.5, alloc='pinned', gpu='0', numa=0,
             via='c2c', p99=None) -> str:
    p99 = us * 2 if p99 is None else p99
    return (f'MEMPATH memcpy mode=latency gpu={gpu} host_numa={numa} cpu_numa=0 '
            f'alloc={alloc} direction={direction} engine=ce size={size} via={via} '
            f'timing=host placement=numa0 status=ok median_us={us} p99_us={p99} min_us=1 '
            'max_us=99 reps=1000')


def values_of(lines: list[str], kind: str, *args, **kwargs) -> dict[str, tuple[float, str]]:
    return mempath_summary.transfer_perf_values(mempath_summary.parse_memcpy_lines(lines),
                                                kind, *args, **kwargs)


def test_schema_lines_parse():
    t = mempath_summary.parse_memcpy_lines(SCHEMA_LINES + ['mempath: 3 cases written',
                                                           'MEMPATH bw op=read x=1 status=ok'])
    assert [x.status for x in t] == ['ok', 'ok', 'skipped']
    assert (t[0].median_GBps, t[0].h2d_median_GBps, t[0].d2h_median_GBps) == \
        (101.22, 50.61, 50.60)
    assert (t[1].mode, t[1].size, t[1].median_us, t[1].p99_us) == ('latency', 4, 9.812, 12.4)
    assert t[2].median_GBps is None
    assert [x.via for x in t] == ['pcie'] * 3
    assert (t[0].class_var, t[0].part_var('d2h'), t[1].class_var) == \
        ('gpu_numa_pcie_bidir_ce_pinned', 'gpu_numa_pcie_bidir_d2h_ce_pinned',
         'gpu_numa_pcie_h2d_ce_pinned')
    assert all(re.match(mempath_summary.LINE_PATTERN, line) for line in SCHEMA_LINES)
    assert mempath_summary.parse_bw_lines(SCHEMA_LINES) == []


def test_transfer_classes_by_links_and_gpus():
    lines = [bw_line(via='c2c+interconnect'), bw_line(gpu='all', numa=-1),
             bw_line(gpu='3', numa=3, via='PCIe'), bw_line(gpu='1', numa=1, via='')]
    assert [t.class_var for t in mempath_summary.parse_memcpy_lines(lines)] == [
        'gpu_numa_c2c_interconnect_h2d_ce_pinned', 'gpus_numa_c2c_h2d_ce_pinned',
        'gpu_numa_pcie_h2d_ce_pinned', 'gpu_numa_unknown_h2d_ce_pinned']


def test_bandwidth_classes_report_their_slowest_gpu():
    lines = SCHEMA_LINES + [
        bw_line(gbps=50.0), bw_line(gpu='1', numa=1, gbps=45.0),     # slowest GPU: 45
        bw_line(gpu='2', numa=2, gbps=10.0, status='failed'),          # no figure
        bw_line(direction='d2h', gbps=40.0),
        bw_line(numa=1, via='c2c+interconnect', gbps=30.0),
        bw_line(gpu='1', numa=0, via='c2c+interconnect', gbps=31.0),
        bw_line(numa=1, via='c2c+interconnect', engine='sm', alloc='registered', gbps=20.0),
        # Each direction of a bidir case is a class of its own: gpu0's h2d, gpu1's d2h.
        bw_line(direction='bidir', gbps=90.0, h2d=46.0, d2h=44.0),
        bw_line(gpu='1', numa=1, direction='bidir', gbps=100.0, h2d=60.0, d2h=40.0),
        bw_line(gpu='all', numa=-1, gbps=200.0)]
    assert values_of(lines, 'bandwidth') == {
        'gpu_numa_pcie_bidir_ce_pinned_min': (101.22, 'GB/s'),
        'gpu_numa_pcie_bidir_h2d_ce_pinned_min': (50.61, 'GB/s'),
        'gpu_numa_pcie_bidir_d2h_ce_pinned_min': (50.60, 'GB/s'),
        'gpu_numa_c2c_h2d_ce_pinned_min': (45.0, 'GB/s'),
        'gpu_numa_c2c_d2h_ce_pinned_min': (40.0, 'GB/s'),
        'gpu_numa_c2c_bidir_ce_pinned_min': (90.0, 'GB/s'),
        'gpu_numa_c2c_bidir_h2d_ce_pinned_min': (46.0, 'GB/s'),
        'gpu_numa_c2c_bidir_d2h_ce_pinned_min': (40.0, 'GB/s'),
        'gpu_numa_c2c_interconnect_h2d_ce_pinned_min': (30.0, 'GB/s'),
        'gpu_numa_c2c_interconnect_h2d_sm_registered_min': (20.0, 'GB/s'),
        'gpus_numa_c2c_h2d_ce_pinned_min': (200.0, 'GB/s'),
    }
    # Without `parts` (a full-coverage check), a bidir case reports its sum only.
    whole = values_of(lines, 'bandwidth', parts=False)
    assert whole == {n: v for n, v in values_of(lines, 'bandwidth').items()
                     if '_bidir_h2d_' not in n and '_bidir_d2h_' not in n}
    assert len(whole) == 7 and 'gpu_numa_c2c_bidir_ce_pinned_min' in whole
    assert all(mempath_summary.TRANSFER_VAR_RE.fullmatch(n) for n in whole)
    with pytest.raises(ValueError):
        values_of(lines, 'chase')


def test_sweep_classes_report_the_slowest_peak_only():
    lines = [bw_line(size=4096 << i, gbps=g, sat=1 << 20)
             for i, g in enumerate((5.0, 20.0, 48.0, 51.0, 50.5))]               # gpu0: 51
    lines += [bw_line(gpu='1', numa=1, size=4096 << i, gbps=g, sat=1 << 22)
              for i, g in enumerate((4.0, 49.0, 47.0))]                         # gpu1: 49
    lines += [bw_line(direction='d2h', size=4096, gbps=3.0, sat=-1),
              bw_line(direction='d2h', size=8192, status='skipped'),
              bw_line(gpu='2', numa=2, direction='d2h', size=8192, status='failed')]
    values = values_of(lines, 'sweep')
    # No saturation size (in memcpy.h5), no one-size variable: `_peak_min` only.
    assert values == {'gpu_numa_c2c_h2d_ce_pinned_peak_min': (49.0, 'GB/s'),
                      'gpu_numa_c2c_d2h_ce_pinned_peak_min': (3.0, 'GB/s')}
    assert all(mempath_summary.TRANSFER_VAR_RE.fullmatch(n)['metric'] == 'peak'
               for n in values)


def test_latency_classes_report_the_slowest_gpu_at_the_chosen_sizes():
    lines = [lat_line(4), lat_line(4, gpu='1', numa=1, us=12.0, p99=15.0),
             lat_line(4, gpu='2', numa=2, us=8.0, p99=30.0),    # best median, worst p99
             lat_line(4, 'd2h', 11.0), lat_line(1024, us=12.0), lat_line(1 << 20, us=40.0),
             lat_line(4, numa=1, via='c2c+interconnect', us=14.0), bw_line()]
    only4 = values_of(lines, 'latency', [4])
    assert only4 == {'gpu_numa_c2c_h2d_ce_pinned_lat4B_max': (12.0, 'us'),
                     'gpu_numa_c2c_h2d_ce_pinned_lat4B_p99_max': (30.0, 'us'),
                     'gpu_numa_c2c_d2h_ce_pinned_lat4B_max': (11.0, 'us'),
                     'gpu_numa_c2c_d2h_ce_pinned_lat4B_p99_max': (22.0, 'us'),
                     'gpu_numa_c2c_interconnect_h2d_ce_pinned_lat4B_max': (14.0, 'us'),
                     'gpu_numa_c2c_interconnect_h2d_ce_pinned_lat4B_p99_max': (28.0, 'us')}
    # None: every size (a check asks for 4 B unless `report_sizes` says otherwise).
    every = values_of(lines, 'latency')
    assert every['gpu_numa_c2c_h2d_ce_pinned_lat1KiB_max'] == (12.0, 'us')
    assert every['gpu_numa_c2c_h2d_ce_pinned_lat1MiB_p99_max'] == (80.0, 'us')
    assert len(every) == 10 and only4.items() <= every.items()
    assert all(mempath_summary.TRANSFER_VAR_RE.fullmatch(n) for n in every)


@pytest.mark.parametrize('name, report_sizes, sizes', [
    ('MempathTransferLatency %coverage=acceptance', None, [4]),
    ('MempathTransferLatency %coverage=full', None, [4]),
    ('MempathTransferLatency %coverage=full', [4, 1024], [4, 1024]),
])
def test_latency_checks_report_4_bytes_by_default(name: str, report_sizes, sizes):
    check = CheckValues(name, report_sizes)
    assert check.latency_sizes() == sizes
    lines = mempath_summary.parse_lines([lat_line(4), lat_line(1024), lat_line(1 << 20)])
    labels = {mempath_summary.size_label(s) for s in sizes}
    assert {mempath_summary.TRANSFER_VAR_RE.fullmatch(n)['metric'].split('_')[0][3:]
            for n in check.perf_values(lines)} == labels


@pytest.mark.parametrize('size, label', [(4, '4B'), (512, '512B'), (1024, '1KiB'),
                                         (1 << 20, '1MiB'), (3 << 30, '3GiB'), (1536, '1536B')])
def test_size_labels(size: int, label: str):
    assert mempath_summary.size_label(size) == label


def test_transfer_names_do_not_collide_with_bandwidth_names():
    transfer_names = ['gpu_numa_c2c_h2d_ce_pinned_min', 'gpus_numa_c2c_bidir_sm_managed_min',
                      'gpu_numa_c2c_interconnect_bidir_d2h_ce_registered_min',
                      'gpu_numa_c2c_d2h_sm_system_peak_min',
                      'gpu_numa_pcie_h2d_ce_pinned_lat4B_p99_max']
    assert all(mempath_summary.TRANSFER_VAR_RE.fullmatch(n) for n in transfer_names)
    assert all(not mempath_summary.PERF_VAR_RE.fullmatch(n) for n in transfer_names)
    bandwidth_names = ['gpu_numa_c2c_pinned_min', 'cpu_numa_c2c_interconnect_numa_min',
                       'gpu_gpu_local_device_min', 'gpu0_gpu0_device_grid']
    assert not any(mempath_summary.TRANSFER_VAR_RE.fullmatch(n) for n in bandwidth_names)
    # No bandwidth reference applies to a transfer variable, nor the other way round.
    for op in references.REFERENCES:
        assert references.resolve(op, transfer_names) == {}, op
    assert references.resolve_transfers(bandwidth_names) == {}


# ---- references --------------------------------------------------------------------------

def defined_partitions() -> set[str]:
    names = set()
    for config in ('generic.py', 'alps.py', 'ci.py'):
        for system in runpy.run_path(str(CONFIGS / config))['site_configuration']['systems']:
            names |= {f"{system['name']}:{p['name']}" for p in system['partitions']}
    return names


def test_transfer_references_are_keyed_by_class():
    partitions = defined_partitions()
    assert references.TRANSFER_REFERENCES, 'no transfer references at all'
    assert references.TRANSFER_REFERENCES[references.GH200] == references._gh200_transfers()
    for key, patterns in references.TRANSFER_REFERENCES.items():
        assert isinstance(key, references.Arch) or key in partitions, \
            f'{key} is no configured partition'
        for pattern, ref in patterns.items():
            match = mempath_summary.TRANSFER_VAR_RE.fullmatch(pattern)
            assert match, pattern
            # A class names no GPU and no node (the weakest GPU of the class reports).
            assert not re.search(r'(gpu|numa)\d', pattern), pattern
            value, lower, upper, unit = ref
            metric = match['metric'] or ''
            latency = metric.startswith('lat')
            assert unit == ('us' if latency else 'GB/s'), (pattern, ref)
            assert pattern.endswith('_max' if latency else '_min'), pattern
            # Bandwidths are floors (no upper bound).
            assert value > 0 and -1 <= lower < 0, (pattern, ref)
            assert upper is None or unit != 'GB/s', (pattern, ref)
    # Page-locked memory by the copy engine, one way: C2C to the own Grace (one size and
    # the sweep's peak), or on to another superchip's (one size).
    assert set(references._gh200_transfers()) == {
        f'gpu_numa_{via}_{d}_ce_{a}{peak}_min' for a in references.PAGE_LOCKED
        for d in ('h2d', 'd2h') for via, peak in (('c2c', ''), ('c2c', '_peak'),
                                                  ('c2c_interconnect', ''))}
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


def test_resolve_transfers_on_gh200_by_class():
    names = ['gpu_numa_c2c_h2d_ce_pinned_min', 'gpu_numa_c2c_d2h_ce_registered_min',
             'gpu_numa_c2c_interconnect_h2d_ce_pinned_min',
             'gpu_numa_c2c_interconnect_d2h_ce_registered_min',
             'gpu_numa_c2c_interconnect_d2h_ce_pinned_peak_min',   # sweeps: own node only
             'gpu_numa_c2c_h2d_ce_pinned_peak_min', 'gpu_numa_c2c_d2h_ce_registered_peak_min',
             'gpu_numa_c2c_h2d_sm_pinned_min', 'gpu_numa_c2c_h2d_ce_system_min',
             'gpu_numa_c2c_bidir_ce_pinned_min', 'gpu_numa_c2c_bidir_h2d_ce_pinned_min',
             'gpus_numa_c2c_h2d_ce_pinned_min', 'gpu_numa_c2c_h2d_ce_pinned_lat4B_max',
             'gpu_numa_pcie_h2d_ce_pinned_min',
             # The per-path names of before get nothing.
             'gpu2_numa2_h2d_ce_pinned', 'gpu1_numa1_h2d_ce_pinned_peak']
    table = references.resolve_transfers(names)[references.GH200]
    assert table == {
        'gpu_numa_c2c_h2d_ce_pinned_min': references.GH200_H2D_C2C,
        'gpu_numa_c2c_d2h_ce_registered_min': references.GH200_D2H_C2C,
        'gpu_numa_c2c_interconnect_h2d_ce_pinned_min': references.GH200_REMOTE_SOCKET,
        'gpu_numa_c2c_interconnect_d2h_ce_registered_min': references.GH200_REMOTE_SOCKET,
        'gpu_numa_c2c_h2d_ce_pinned_peak_min': references.GH200_H2D_C2C,
        'gpu_numa_c2c_d2h_ce_registered_peak_min': references.GH200_D2H_C2C,
    }
    assert references.resolve_transfers(['gpu_gpu_local_device_min']) == {}


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


def test_checks_report_their_classes_and_keep_the_hdf5(tmp_path: Path, gpu_config: Path):
    bandwidth = [bw_line(), bw_line(gpu='1', numa=1, gbps=48.0),     # the class: gpu1's
                 bw_line(direction='d2h', gbps=45.5),
                 bw_line(direction='bidir', gbps=90.0), SCHEMA_LINES[2]]
    sweep = [bw_line(size=4096, gbps=2.0, sat=1 << 23),
             bw_line(size=1 << 23, gbps=49.0, sat=1 << 23),
             bw_line(gpu='1', numa=1, size=1 << 23, gbps=52.0, sat=1 << 22)]
    latency = [lat_line(4), lat_line(4, gpu='1', numa=1, us=9.0, p99=25.0),
               lat_line(4, 'd2h', 10.25), lat_line(8, us=9.75)]
    fake_mempath(tmp_path / 'fake_src', bandwidth, sweep, latency)
    cases = run_checks(tmp_path, gpu_config, 'MempathTransferBandwidth', 'MempathTransferSweep',
                       'MempathTransferLatency')
    for name in ('MempathTransferBandwidth %coverage=acceptance',
                 'MempathTransferBandwidth %coverage=full', 'MempathTransferSweep',
                 'MempathTransferLatency %coverage=acceptance',
                 'MempathTransferLatency %coverage=full'):
        assert cases[name]['result'] == 'pass', cases[name]['fail_reason']
        kept = Path(cases[name]['outputdir'])
        assert (kept / 'memcpy.h5').is_file(), f'memcpy.h5 not kept in {kept}'
    one_size = {
        'gpu_numa_c2c_h2d_ce_pinned_min': (48.0, 'GB/s'),
        'gpu_numa_c2c_d2h_ce_pinned_min': (45.5, 'GB/s'),
        'gpu_numa_c2c_bidir_ce_pinned_min': (90.0, 'GB/s'),
    }
    # The directions of a bidir case at acceptance coverage only.
    assert perf(cases['MempathTransferBandwidth %coverage=acceptance']) == {
        **one_size,
        'gpu_numa_c2c_bidir_h2d_ce_pinned_min': (46.0, 'GB/s'),
        'gpu_numa_c2c_bidir_d2h_ce_pinned_min': (44.0, 'GB/s'),
    }
    assert perf(cases['MempathTransferBandwidth %coverage=full']) == one_size
    assert perf(cases['MempathTransferSweep']) == {   # gpu0's peak; no saturation size
        'gpu_numa_c2c_h2d_ce_pinned_peak_min': (49.0, 'GB/s'),
    }
    at_4_bytes = {
        'gpu_numa_c2c_h2d_ce_pinned_lat4B_max': (9.5, 'us'),
        'gpu_numa_c2c_h2d_ce_pinned_lat4B_p99_max': (25.0, 'us'),
        'gpu_numa_c2c_d2h_ce_pinned_lat4B_max': (10.25, 'us'),
        'gpu_numa_c2c_d2h_ce_pinned_lat4B_p99_max': (20.5, 'us'),
    }
    # 4 B only, whatever the coverage (every size stays in memcpy.h5).
    assert perf(cases['MempathTransferLatency %coverage=acceptance']) == at_4_bytes
    assert perf(cases['MempathTransferLatency %coverage=full']) == at_4_bytes


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
def test_gh200_references_judge_the_weakest_gpu_of_a_class(tmp_path: Path, gh200_config: Path,
                                                           h2d: float, result: str):
    lines = [bw_line(gpu='0', numa=0, gbps=420.0),       # the other GPU is always fast
             bw_line(gpu='1', numa=1, gbps=h2d),
             bw_line(gpu='1', numa=1, direction='d2h', gbps=300.0),
             bw_line(gpu='1', numa=1, direction='bidir', gbps=1.0)]   # no reference: any
    fake_mempath(tmp_path / 'fake_src', lines, [], [])
    name = 'MempathTransferBandwidth %coverage=acceptance'
    case = run_checks(tmp_path, gh200_config,
                      'MempathTransferBandwidth%coverage=acceptance')[name]
    assert case['result'] == result, case['fail_reason']
    assert perf(case)['gpu_numa_c2c_h2d_ce_pinned_min'] == (h2d, 'GB/s')
    refs = {k.split(':')[-1]: v[1] for k, v in case['perfvalues'].items()}
    assert refs == {'gpu_numa_c2c_h2d_ce_pinned_min': references.GH200_H2D_C2C[0],
                    'gpu_numa_c2c_d2h_ce_pinned_min': references.GH200_D2H_C2C[0],
                    'gpu_numa_c2c_bidir_ce_pinned_min': 0,
                    'gpu_numa_c2c_bidir_h2d_ce_pinned_min': 0,
                    'gpu_numa_c2c_bidir_d2h_ce_pinned_min': 0}
    if result == 'fail':
        assert case['fail_phase'] == 'performance'
        assert 'gpu_numa_c2c_h2d_ce_pinned_min' in case['fail_reason']
