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

import mempath_run  # noqa: E402
import mempath_summary  # noqa: E402
import references  # noqa: E402
import shared_render  # noqa: E402

OPS = ('read', 'write', 'copy')
CPU_KERNELS = ('avx512', 'avx2', 'neon', 'sve', 'scalar')
QUAD_GH200 = REPO / 'tests' / 'fixtures' / 'gh200_quad'


def check_name(op: str, kind: str, coverage: str = 'full') -> str:
    return f'MempathBandwidth %op={op} %pu_kind={kind} %coverage={coverage}'


def bandwidth_names(kinds: tuple[str, ...]) -> list[str]:
    """Every op's full check and the acceptance checks of reads and copies, per kind."""
    return sorted([check_name(op, k) for op in OPS for k in kinds] +
                  [check_name(op, k, 'acceptance') for op in ('read', 'copy') for k in kinds])


def reframe_exe() -> str:
    local = Path(sys.executable).with_name('reframe')
    found = str(local) if local.exists() else shutil.which('reframe')
    assert found, 'reframe is not installed (pip install -r requirements.txt)'
    return found


def path_without_mempath(path: str) -> str:
    """PATH less the folders that hold a `mempath` (site_configs/setup_env.sh puts the build
    there, as CI's test command does): MempathBuild would run that binary (`mempath_bin`)
    instead of the one a test builds from its stand-in sources. A test that means an
    installed binary names it (`-S MempathBuild.mempath_bin=...` or its own PATH)."""
    return os.pathsep.join(d for d in path.split(os.pathsep)
                           if not (d and (Path(d) / 'mempath').is_file()))


def reframe(*args: str, env: dict[str, str] | None = None,
            timeout: int = 120) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    clean['PATH'] = path_without_mempath(clean.get('PATH', ''))
    clean.update(env or {})
    return subprocess.run([reframe_exe(), *args], cwd=REPO, env=clean, capture_output=True,
                          text=True, timeout=timeout)


def listing(config: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """`reframe -C CONFIG -c reframe_checks -l ARGS`. That of a configuration of site_configs
    is made once in the run for every test file that lists it alike (shared_render: 2 s of
    ReFrame's start each time; a listing reads only the checks and that file, which no test
    changes); that of a test's own configuration, every time."""
    command = ('-C', str(config), '-c', str(CHECKS), '-l', *args)
    if config.parent != CONFIGS:
        return reframe(*command, timeout=timeout)
    folder = shared_render.once(['reframe', *command],
                                lambda folder: shared_render.completed(folder, reframe(*command, timeout=timeout)))
    return shared_render.completed(folder)


def listed(config: str, *args: str) -> list[str]:
    """Names of the (non-fixture) checks a `reframe -l` lists; fails on load warnings."""
    out = listing(CONFIGS / config, *args)
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


def generic_variant(path: Path, features: list[str], processor: dict | None = None,
                    devices: list[dict] | None = None) -> Path:
    """generic.py written to `path` with its one partition given `features` (`remote`
    added: where the checks run) and, when given, `processor` and `devices`; its
    environment has every feature the checks ask for. A stand-in for a site's partition."""
    part = {'features': ['remote', *features]}
    if processor is not None:
        part['processor'] = processor
    if devices is not None:
        part['devices'] = devices
    path.write_text(
        'import runpy\n'
        f"site_configuration = runpy.run_path({str(CONFIGS / 'generic.py')!r})"
        "['site_configuration']\n"
        f"site_configuration['systems'][0]['partitions'][0].update({part!r})\n"
        "site_configuration['environments'][0]['features'] = ['compiler', 'cuda', 'mpi']\n")
    return path


def gh200_variant(path: Path) -> Path:
    """generic.py as a GH200 partition (local scheduler): its architecture's references
    apply to a run here."""
    return generic_variant(path, ['gpu', 'nvgpu'], {'arch': references.GH200.processor},
                           [{'type': 'gpu', 'arch': references.GH200.gpu, 'num_devices': 1}])


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
    assert sorted(bandwidth_checks(listed('generic.py'))) == bandwidth_names(kinds)


def test_acceptance_tag_selects_read_and_copy():
    names = listed('generic.py', '--tag', 'acceptance', '--tag', 'cpu')
    assert sorted(names) == sorted([check_name('read', 'cpu', 'acceptance'), check_name('copy', 'cpu', 'acceptance')])
    full = listed('generic.py', '--tag', 'full', '--tag', 'cpu')
    assert len(full) == len(OPS)


def test_alps_config_lists_gpu_checks_on_gh200():
    names = bandwidth_checks(listed('alps.py', '--system', 'daint:normal'))
    assert sorted(names) == bandwidth_names(('cpu', 'gpu'))


def alps_partitions(system: str = 'daint') -> dict[str, dict]:
    out = reframe('-C', str(CONFIGS / 'alps.py'), '--system', system,
                  '--show-config=systems/0/partitions')
    assert out.returncode == 0, out.stderr
    return {p['name']: p for p in json.loads(out.stdout[out.stdout.index('['):])}


@pytest.mark.parametrize('vcluster', ['daint', 'clariden', 'santis'])
def test_alps_config_is_shaped_like_the_centres(vcluster):
    """Each vCluster: a login partition with no compute feature, and `normal` with the
    features the checks select by and the node's processor and GPUs."""
    parts = alps_partitions(vcluster)
    assert set(parts) == {'login', 'normal'}
    assert parts['login']['scheduler'] == 'local'
    assert not {'remote', 'gpu', 'nvgpu', 'mpi'} & set(parts['login'].get('features', []))
    normal = parts['normal']
    assert normal['scheduler'] == 'slurm'
    assert {'remote', 'gpu', 'nvgpu', 'mpi', 'uenv'} <= set(normal['features'])
    assert normal['processor']['num_cpus'] == 288
    assert normal['processor']['arch'] == references.GH200.processor
    assert normal['devices'] == [{'type': 'gpu', 'arch': references.GH200.gpu, 'num_devices': 4}]
    # The GPUs are asked for through num_gpus_per_node, not hard-coded in the access line.
    assert not any('gpus' in a for a in normal['access'])


def test_no_check_lands_on_a_login_partition():
    assert listed('alps.py', '--system', 'daint:login') == []


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
    assert sorted(bandwidth) == bandwidth_names(('cpu',))
    others = {n.split(' %')[0] for n in names} - {'MempathBandwidth'}
    assert others == {'MempathChase', 'MempathChaseSweep', 'MempathMpiBandwidth', 'MempathInventory',
                      'MempathStream', 'MempathStreamSweep', 'MempathVetting',
                      # the paper set's CPU and MPI steps (reframe_checks/paper_set.py)
                      'MempathPaperBandwidthCpu', 'MempathPaperCopyScalingCpu', 'MempathPaperLatencyCpu',
                      'MempathPaperMpiBandwidth'}


def check_source_lines() -> list[str]:
    return [line for path in sorted(CHECKS.glob('*.py'))
            for line in path.read_text().splitlines()]


def test_the_checks_read_the_allocators_of_kinds_def_as_the_analysis_does():
    """mempath_kinds.py reads src/core/kinds.def with the standard library (the checks
    import nothing of the analysis): its reading is the analysis's, order and classes."""
    import mempath_kinds
    from analysis.results import kinds
    assert mempath_kinds.ALLOCATORS == kinds.ALLOC_ORDER
    assert mempath_kinds.ALLOC_CLASS == {a: kinds.ALLOC_CLASS[a] for a in kinds.ALLOC_ORDER}
    assert mempath_kinds.CUDA_ALLOCATORS == tuple(a for a in kinds.ALLOC_ORDER if kinds.ALLOCATORS[a]['needs_cuda'])
    assert mempath_kinds.PAGE_LOCKED == tuple(a for a in kinds.ALLOC_ORDER if kinds.ALLOCATORS[a]['page_locked'])
    assert mempath_kinds.HOST_ALLOCATORS == tuple(a for a in kinds.ALLOC_ORDER if not kinds.ALLOCATORS[a]['gpu_memory'])
    assert not re.search(r'^\s*(import|from)\s+(analysis|mempath_analysis)\b|deffile',
                         '\n'.join(check_source_lines()), re.M)


def test_every_check_is_found_by_its_class_name():
    """A check a report or a log names (`MempathStream`, `MempathPaperLlm7b`) is a `class
    NAME(` statement of reframe_checks/: none is made at load time where grep cannot find it."""
    source = '\n'.join(check_source_lines())
    names = {n.split(' %')[0] for n in listed('alps.py', '--system', 'daint:normal')}
    assert len(names) > 30
    assert [n for n in sorted(names) if not re.search(rf'^class {n}\(', source, re.M)] == []
    assert 'make_test' not in source


def test_checks_select_partitions_and_environments_by_feature_only():
    """A `*` lands on login nodes (and on any environment): centres select by feature."""
    lines = [l for l in check_source_lines() if 'valid_systems' in l or 'valid_prog_environs' in l]
    assert lines
    assert not [l for l in lines if "'*'" in l or '"*"' in l]


def test_environments_follow_the_partitions_features():
    assert mempath_run.environs_for(mempath_run.CPU_NODES) == ['+compiler']
    assert mempath_run.environs_for(mempath_run.GPU_NODES) == ['+compiler +cuda']
    assert mempath_run.environs_for(mempath_run.MPI_GPU_NODES) == ['+compiler +cuda +mpi']
    for spec in (mempath_run.CPU_NODES, mempath_run.GPU_NODES, mempath_run.MPI_NODES):
        assert '+remote' in spec[0]


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
        for key, patterns in table.items():
            if not isinstance(key, references.Arch):
                assert key in partitions, f'{op}: {key} is no configured partition'
            for pattern, ref in patterns.items():
                assert mempath_summary.CLASS_VAR_RE.fullmatch(pattern), \
                    f'{op} {key}: {pattern} does not follow the naming scheme'
                value, lower, upper, unit = ref
                # Bandwidths are floors: no upper bound.
                assert unit == 'GB/s' and value > 0 and -1 <= lower < 0 and upper is None, \
                    (pattern, ref)


def test_reference_floors_hold_the_published_ranges_and_anything_faster():
    from reframe.utility import sanity as sn
    from reframe.core.exceptions import SanityError
    for (low, high), ref in (((3700, 3870), references.HOPPER_HBM),
                             ((75, 125), references.PEER_SUPERCHIP),
                             ((440, 500), references.GRACE_LPDDR)):
        value, lower, upper, _ = ref
        for inside in (low, high, (low + high) / 2, high * 10):
            assert sn.evaluate(sn.assert_reference(inside, value, lower, upper))
        with pytest.raises(SanityError):
            sn.evaluate(sn.assert_reference(low * 0.9, value, lower, upper))


def test_resolve_gives_gh200_references_per_class():
    names = ['gpu_gpu_local_device_min', 'gpu_numa_local_numa_min', 'gpu_numa_c2c_pinned_min',
             'cpu_numa_local_numa_min', 'cpu_numa_c2c_numa_min',
             'cpu_numa_interconnect_c2c_numa_min', 'cpus_numa_spread_numa_min',
             'gpu_numa_c2c_system_min']
    table = references.resolve('read', names)[references.GH200]
    assert table['gpu_gpu_local_device_min'] == references.HOPPER_HBM
    assert table['gpu_numa_local_numa_min'] == references.HOPPER_HBM
    assert table['gpu_numa_c2c_pinned_min'] == references.HOPPER_C2C_LPDDR
    assert table['cpu_numa_local_numa_min'] == references.GRACE_LPDDR
    assert table['cpu_numa_c2c_numa_min'] == references.GRACE_C2C_HBM
    assert table['cpu_numa_interconnect_c2c_numa_min'] == references.PEER_SUPERCHIP
    assert 'cpus_numa_spread_numa_min' not in table and 'gpu_numa_c2c_system_min' not in table
    assert references.resolve('write', names) == {}


class FakePartition:
    """What the reference lookup reads of ReFrame's partition."""

    def __init__(self, fullname: str, arch: str | None, gpu_archs: tuple[str, ...]):
        self.fullname = fullname
        self.processor = type('Processor', (), {'arch': arch})()
        self._gpus = [type('Device', (), {'arch': a, 'num_devices': 1})() for a in gpu_archs]

    def select_devices(self, kind: str):
        return self._gpus if kind == 'gpu' else []


def test_references_follow_the_architecture_whatever_the_system_is_called():
    names = ['cpu_numa_local_numa_min']
    for fullname in ('daint:normal', 'santis:normal', 'mylab:gh200'):
        part = FakePartition(fullname, 'neoverse_v2', ('sm_90',))
        assert references.resolve('read', names, part) == {
            fullname: {'cpu_numa_local_numa_min': references.GRACE_LPDDR}}
    for other in (FakePartition('x86:h100', 'zen4', ('sm_90',)),
                  FakePartition('grace:cpu', 'neoverse_v2', ()),
                  FakePartition('linux:default', None, ())):
        assert references.resolve('read', names, other) == {}


def test_a_systems_own_references_win_over_its_architectures():
    own = (1.0, -0.5, None, 'GB/s')
    tables = {references.GH200: {'x': references.GRACE_LPDDR}, 'daint:normal': {'x': own}}
    part = FakePartition('daint:normal', 'neoverse_v2', ('sm_90',))
    assert references.resolve_in(tables, ['x'], part) == {'daint:normal': {'x': own}}
    other = FakePartition('santis:normal', 'neoverse_v2', ('sm_90',))
    assert references.resolve_in(tables, ['x'], other) == {
        'daint:normal': {'x': own}, 'santis:normal': {'x': references.GRACE_LPDDR}}


def quad_gh200_lines(binary: Path, op: str, pu_kind: str) -> list[str]:
    """The summary lines a quad-GH200 node would print for `bw --all --op OP --pu-kind
    KIND` (its topology snapshot's plan; `via` as the binary routes it: the links of
    processor -> source and -> destination; made-up bandwidths), `sve` for the CPU kernel
    that the binary picks only when it runs."""
    topo = json.loads(subprocess.run([str(binary), 'topo', '--json', '--from', str(QUAD_GH200)],
                                     capture_output=True, text=True, check=True).stdout)
    vias = {(p['pu'], p['mem']): p['via'] for p in topo['paths']}
    out = subprocess.run([str(binary), 'list', '--from', str(QUAD_GH200), '--op', op,
                          '--pu-kind', pu_kind], capture_output=True, text=True, check=True)
    lines = []
    header, *rows = out.stdout.splitlines()   # op pu mem dst alloc kernel threads ... status
    status = header.split().index('status')
    for i, line in enumerate(rows):
        fields = line.split()
        if fields[status] == 'skipped':
            continue
        op_, pu, mem, dst, alloc, kernel, threads = fields[:7]
        links = [l for m in (mem, dst) if m != '-' for l in vias[(pu, m)].split('+')]
        via = '+'.join(dict.fromkeys(l for l in links if l != 'local')) or 'local'
        lines.append(f'MEMPATH bw op={op_} pu={pu} mem={mem} dst={dst} alloc={alloc} '
                     f'kernel={"sve" if kernel == "-" else kernel} threads={threads} size=1 via={via} '
                     f'placement=- status=ok median_GBps={100 + i % 97} min_GBps=1 '
                     f'max_GBps=2 reps=3')
    return lines


def built_binary() -> Path:
    binary = mempath_binary()
    if binary is None:
        pytest.skip('no mempath binary built (tests/run_tests.sh builds it)')
    return binary


@pytest.mark.parametrize('op', OPS)
@pytest.mark.parametrize('pu_kind', ['cpu', 'gpu'])
def test_a_quad_gh200_check_reports_at_most_30_variables(op, pu_kind):
    """~1,344 paths on a quad GH200 today: a check reports the weakest of each class."""
    lines = quad_gh200_lines(built_binary(), op, pu_kind)
    assert len(lines) > 100
    import bandwidth
    values = bandwidth.BandwidthMetric.values(mempath_summary.parse_lines(lines, 'bw'))
    assert 3 <= len(values) <= mempath_summary.MAX_PERF_VARS, sorted(values)
    for name in values:
        assert mempath_summary.CLASS_VAR_RE.fullmatch(name), name


def test_a_class_reports_its_weakest_gpu_at_its_best_kernel():
    line = ('MEMPATH bw op=read pu={pu} mem={mem} dst=- alloc=device kernel={k} threads=1 '
            'size=1 via={via} placement=- status=ok median_GBps={v} min_GBps=1 max_GBps=2 reps=3')
    lines = [line.format(pu='gpu0', mem='gpu0', k='grid', via='local', v=3000),
             line.format(pu='gpu0', mem='gpu0', k='block', via='local', v=50),  # one block
             line.format(pu='gpu1', mem='gpu1', k='grid', via='local', v=2900),
             line.format(pu='gpu0', mem='gpu1', k='grid', via='nvlink', v=120)]
    cases = mempath_summary.class_minima(map(mempath_summary.bw_case,
                                             mempath_summary.parse_lines(lines, 'bw')))
    assert {n: c.median_GBps for n, c in cases.items()} == {
        'gpu_gpu_local_device_min': 2900, 'gpu_gpu_nvlink_device_min': 120}
    assert cases['gpu_gpu_local_device_min'].pu == 'gpu1'


def test_a_class_counts_a_path_only_where_its_pages_stayed():
    """An H100 run (device, 2026-11-25): managed memory on numa0 read by the GPU migrated
    into HBM and ran at 3,083 GB/s; the binary marks it `placed=0` and it must not become
    the host-memory class's figure (the report's matrix follows the same rule)."""
    line = ('MEMPATH bw op=read pu=gpu0 mem={mem} dst=- alloc={alloc} kernel=grid threads=1 '
            'size=1 via={via} placement=unknown {placed}status=ok median_GBps={v} min_GBps=1 '
            'max_GBps=2 reps=3')
    lines = [line.format(mem='numa0', alloc='managed', via='pcie', placed='placed=0 ', v=3083),
             line.format(mem='numa0', alloc='pinned', via='pcie', placed='placed=1 ', v=51),
             line.format(mem='numa0', alloc='registered', via='pcie', placed='', v=50),  # older
             line.format(mem='gpu0', alloc='managed', via='local', placed='placed=1 ', v=3800)]
    cases = mempath_summary.class_minima(map(mempath_summary.bw_case,
                                             mempath_summary.parse_lines(lines, 'bw')))
    assert {n: c.median_GBps for n, c in cases.items()} == {
        'gpu_numa_pcie_pinned_min': 51, 'gpu_numa_pcie_registered_min': 50,
        'gpu_gpu_local_managed_min': 3800}


def test_gh200_reference_patterns_name_real_quad_gh200_classes():
    binary = built_binary()
    names = {name for op in ('read',) for kind in ('cpu', 'gpu')
             for name in __import__('bandwidth').BandwidthMetric.values(
                 mempath_summary.parse_lines(quad_gh200_lines(binary, op, kind), 'bw'))}
    patterns = references.REFERENCES['read'][references.GH200]
    for pattern in patterns:
        assert fnmatch.filter(names, pattern), f'{pattern} names no quad-GH200 class'


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
            '-n', 'MempathBandwidth%op=read%pu_kind=cpu%coverage=full',
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
    assert values == {'cpu_numa_local_numa_min': 20.25, 'cpu_numa_local_system_min': 19}


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
site.select_subconfig('daint:normal')
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
    out = reframe('-C', str(CONFIGS / 'alps.py'), '--system', 'daint:normal', '-c', str(CHECKS),
                  '--describe', '-S', 'time_limit=3h')
    assert out.returncode == 0, out.stdout + out.stderr
    limits = {c['name']: c['time_limit'] for c in json.loads(out.stdout)}
    assert limits and set(limits.values()) == {3 * 3600.0}, limits


# ---- a real run ------------------------------------------------------------------------

@pytest.mark.ci
def test_local_run_of_the_cpu_acceptance_check(tmp_path: Path):
    if mempath_binary() is None:
        pytest.skip('mempath does not build here yet (no build/mempath): nothing to run')
    report = tmp_path / 'report.json'
    name = check_name('read', 'cpu', 'acceptance')
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
    assert 'linux:default:cpu_numa_local_numa_min' in perf, perf
    assert len(perf) <= mempath_summary.MAX_PERF_VARS, perf
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


def test_a_gh200_job_asks_for_the_partitions_gpus_and_runs_the_given_binary(tmp_path: Path):
    """num_gpus_per_node from the partition's devices (4 on alps.py's `normal`), and the
    binary of `mempath_bin` (as a uenv's `mempath` on PATH would be): nothing built."""
    out = reframe('-C', str(CONFIGS / 'alps.py'), '--system', 'daint:normal',
                  '-c', str(CHECKS / 'bandwidth.py'), '-n', 'MempathBandwidth%op=read%pu_kind=gpu%coverage=full',
                  '--dry-run', '--prefix', str(tmp_path), '-S', 'MempathBuild.mempath_bin=/opt/uenv/bin/mempath')
    assert out.returncode == 0, out.stdout + out.stderr
    job = next(tmp_path.glob('stage/daint/normal/prgenv-gnu/MempathBandwidth*/rfm_job.sh')).read_text()
    assert '#SBATCH --gpus-per-node=4' in job, job
    assert re.search(r'^srun .*/opt/uenv/bin/mempath bw --all --op read --pu-kind gpu', job, re.M), job
    build = next(tmp_path.glob('stage/daint/normal/prgenv-gnu/MempathBuild*/rfm_build.sh')).read_text()
    assert 'cmake' not in build, build
