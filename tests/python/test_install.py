"""Installing mempath (docs/install.md): the Spack recipe, `cmake --install`, the release
tarball and the pip distribution of the analysis.

Spack cannot be installed here or in CI, so the recipe is loaded against a stub of the
few `spack.package` names it uses, and the CPU-only spec is built with exactly the CMake
arguments its cmake_args() returns (plus the build type and prefix Spack adds itself).
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: site_configs/spack/packages/mempath/package.py as a module of the repository root (Spack
#: itself loads it from its repo's folder).
RECIPE_MODULE = 'site_configs.spack.packages.mempath.package'
CUDA_PREFIX = '/nonexistent/cuda'  # the stub's prefix of the cuda dependency: no nvcc there


# --- a stub of the spack.package API (only what package.py uses) -------------------------

class _Variant:
    def __init__(self, value):
        self.value = value


class _Dep:
    def __init__(self, prefix: str):
        self.prefix = prefix


class StubSpec:
    """`+name`/`~name`/`name=value` queries over a fixed set of variant values."""

    def __init__(self, version: str = '0.2.0', **variants):
        self.version = version
        self.variants = {k: _Variant(v) for k, v in variants.items()}

    def satisfies(self, query: str) -> bool:
        ok = True
        for term in re.findall(r'[+~][\w]+|\w+=[\w,]+', query):
            if term[0] in '+~':
                ok &= bool(self.variants[term[1:]].value) == (term[0] == '+')
            else:
                name, value = term.split('=')
                have = self.variants[name].value
                ok &= set(value.split(',')) <= set(have if isinstance(have, tuple) else (have,))
        return ok

    def __getitem__(self, dependency: str) -> _Dep:
        assert dependency == 'cuda', dependency
        return _Dep(CUDA_PREFIX)


def _define(name: str, value) -> str:
    # Spack's CMakeBuilder.define: booleans as BOOL ON/OFF, lists joined by ';'.
    if isinstance(value, bool):
        return f'-D{name}:BOOL={"ON" if value else "OFF"}'
    if isinstance(value, (list, tuple)):
        value = ';'.join(str(v) for v in value)
    return f'-D{name}:STRING={value}'


def load_recipe():
    """(Mempath class, directives) with `spack.package` stubbed; directives are
    (name, args, kwargs) in the order package.py calls them."""
    directives: list[tuple[str, tuple, dict]] = []

    def directive(name):
        return lambda *args, **kwargs: directives.append((name, args, kwargs))

    class CMakePackage:
        def __init__(self, spec: StubSpec):
            self.spec = spec

        def define(self, name, value):
            return _define(name, value)

        def define_from_variant(self, name, variant):
            return _define(name, self.spec.variants[variant].value)

    class CudaPackage:
        pass

    api = types.ModuleType('spack.package')
    api.CMakePackage, api.CudaPackage = CMakePackage, CudaPackage
    for name in ('version', 'variant', 'depends_on', 'conflicts', 'requires', 'maintainers',
                 'license'):
        setattr(api, name, directive(name))
    api.join_path = os.path.join
    api.__all__ = [n for n in vars(api) if not n.startswith('_')]
    spack = types.ModuleType('spack')
    spack.package = api
    saved = {k: sys.modules.get(k) for k in ('spack', 'spack.package', 'spack_repo')}
    # spack_repo None: the recipe's Spack >= 1.0 import fails and it takes spack.package's.
    sys.modules.update({'spack': spack, 'spack.package': api, 'spack_repo': None})
    try:
        sys.modules.pop(RECIPE_MODULE, None)  # each load records the directives anew
        module = importlib.import_module(RECIPE_MODULE)
    finally:
        sys.modules.pop(RECIPE_MODULE, None)
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module.Mempath, directives


def recipe_args(cuda=False, mpi=True, nccl=False, cuda_arch=('none',)) -> list[str]:
    cls, _ = load_recipe()
    return cls(StubSpec(cuda=cuda, mpi=mpi, nccl=nccl, cuda_arch=tuple(cuda_arch))).cmake_args()


def directives_named(name: str) -> list[tuple[tuple, dict]]:
    return [(a, k) for n, a, k in load_recipe()[1] if n == name]


# --- the recipe --------------------------------------------------------------------------

def cmake_project_version() -> str:
    text = (REPO / 'src' / 'CMakeLists.txt').read_text()
    return re.search(r'^project\(mempath VERSION ([\d.]+)', text, re.MULTILINE).group(1)


def test_recipe_versions_and_release_version_agree():
    versions = {a[0]: k for a, k in directives_named('version')}
    assert versions['main'] == {'branch': 'main'}
    assert versions['0.2.0'] == {'tag': 'v0.2.0'}
    # The newest numbered version of the recipe is the one CMake builds.
    numbered = sorted((v for v in versions if v[0].isdigit()),
                      key=lambda v: tuple(map(int, v.split('.'))))
    assert numbered[-1] == cmake_project_version() == '0.2.0'
    pyproject = re.search(r'^version = "([\d.]+)"', (REPO / 'pyproject.toml').read_text(), re.MULTILINE)
    assert pyproject and pyproject.group(1) == numbered[-1]
    cls, _ = load_recipe()
    assert cls.git.endswith('.git') and cls.git.startswith('https://')


def test_recipe_variants_dependencies_and_conflicts():
    variants = {a[0]: k for a, k in directives_named('variant')}
    assert variants['mpi']['default'] is True
    assert variants['nccl']['default'] is False
    deps = {(a[0], k.get('when')) for a, k in directives_named('depends_on')}
    for dep in [('cmake@3.20:', None), ('numactl', None), ('cuda', '+cuda'), ('mpi', '+mpi'),
                ('nccl', '+nccl')]:
        assert dep in deps, (dep, deps)
    assert any(name.startswith('hdf5') and when is None for name, when in deps), deps
    conflicts = {(a[0], k.get('when')) for a, k in directives_named('conflicts')}
    assert ('~cuda', '+nccl') in conflicts
    assert ('~mpi', '+nccl') in conflicts
    assert ('cuda_arch=none', '+cuda') in conflicts


@pytest.mark.parametrize('variants, expected, absent', [
    (dict(cuda=False, mpi=True),
     ['-DMEMPATH_WITH_CUDA:BOOL=OFF', '-DMEMPATH_REQUIRE_CUDA:BOOL=OFF',
      '-DMEMPATH_WITH_MPI:BOOL=ON', '-DMEMPATH_REQUIRE_MPI:BOOL=ON',
      '-DMEMPATH_WITH_NCCL:BOOL=OFF', '-DMEMPATH_REQUIRE_NCCL:BOOL=OFF'],
     ['CMAKE_CUDA_ARCHITECTURES', 'CMAKE_CUDA_COMPILER']),
    (dict(cuda=True, mpi=True, nccl=True, cuda_arch=('90',)),
     ['-DMEMPATH_WITH_CUDA:BOOL=ON', '-DMEMPATH_REQUIRE_CUDA:BOOL=ON',
      '-DMEMPATH_REQUIRE_MPI:BOOL=ON', '-DMEMPATH_WITH_NCCL:BOOL=ON',
      '-DMEMPATH_REQUIRE_NCCL:BOOL=ON', '-DCMAKE_CUDA_ARCHITECTURES:STRING=90',
      f'-DCMAKE_CUDA_COMPILER:STRING={CUDA_PREFIX}/bin/nvcc'], []),
    (dict(cuda=True, mpi=False, cuda_arch=('80', '90')),
     ['-DMEMPATH_REQUIRE_CUDA:BOOL=ON', '-DMEMPATH_WITH_MPI:BOOL=OFF',
      '-DMEMPATH_REQUIRE_MPI:BOOL=OFF', '-DCMAKE_CUDA_ARCHITECTURES:STRING=80;90'], []),
])
def test_recipe_cmake_args(variants, expected, absent):
    args = recipe_args(**variants)
    for arg in expected + ['-DMEMPATH_TESTS:BOOL=OFF', '-DMEMPATH_GIT_REVISION:STRING=0.2.0']:
        assert arg in args, (arg, args)
    for name in absent:
        assert not any(name in a for a in args), (name, args)
    # Every option the recipe sets is one src/CMakeLists.txt declares (a typo would be
    # ignored by CMake with only a warning).
    cmake = (REPO / 'src' / 'CMakeLists.txt').read_text()
    for arg in args:
        name = re.match(r'-D(\w+):', arg).group(1)
        if name.startswith('MEMPATH_'):
            assert re.search(rf'(option|set)\({name}\b', cmake), name


# --- configure, build and install with the recipe's arguments ----------------------------

def cmake(*args: str, cwd: Path, timeout: int = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(['cmake', *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


#: An MPI to build mempath-mpi with. The README's machine has none (the setup installs no
#: MPI); CI's own pass (these tests are `ci`) has one and installs both variants: `~mpi`,
#: and the recipe's default `+mpi`, which fails without MPI by design.
HAVE_MPI = shutil.which('mpicc') is not None


@pytest.fixture(scope='module', params=[False, True], ids=['~mpi', '+mpi'])
def installed(request, tmp_path_factory) -> Path:
    """PREFIX of `~cuda ~mpi` and of `~cuda +mpi` (where MPI is installed) configured with
    the recipe's arguments (as Spack passes them: from the top-level CMakeLists.txt,
    Release, its own prefix), built and installed."""
    mpi = request.param
    if mpi and not HAVE_MPI:
        pytest.skip('no MPI here (mpicc): the +mpi variant is installed where MPI is (CI\'s own pass)')
    if not shutil.which('cmake'):
        pytest.fail('cmake is not installed (apt-get install cmake)')
    tmp = tmp_path_factory.mktemp('spack_like')
    build, prefix = tmp / 'build', tmp / 'prefix'
    args = recipe_args(cuda=False, mpi=mpi)
    done = cmake('-S', str(REPO), '-B', str(build), '-DCMAKE_BUILD_TYPE=Release',
                 f'-DCMAKE_INSTALL_PREFIX={prefix}', *args, cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'mempath: CUDA support OFF' in done.stdout
    expected = ('mempath: mempath-mpi ON (NCCL OFF)' if mpi else
                'mempath: mempath-mpi OFF (no MPI found)')
    assert expected in done.stdout
    done = cmake('--build', str(build), '-j', str(os.cpu_count() or 2), cwd=tmp)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr
    done = cmake('--install', str(build), cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(build)  # nothing below may use the build tree
    return prefix


@pytest.mark.ci
def test_install_tree(installed: Path, request):
    bindir, share = installed / 'bin', installed / 'share' / 'mempath'
    mpi = request.node.callspec.params['installed']
    for exe in ('mempath', 'mempath-mpi'):
        assert os.access(bindir / exe, os.X_OK) == (exe == 'mempath' or mpi), exe
    # The placement library is built with CUDA only.
    assert not (installed / 'lib' / 'libmempath_placement.so').exists()
    checks = {p.name for p in (REPO / 'reframe_checks').glob('*.py')} | {'run_suite.sh'}
    assert checks <= {p.name for p in (share / 'reframe_checks').iterdir()}
    assert os.access(share / 'reframe_checks' / 'run_suite.sh', os.X_OK)
    assert (share / 'kinds.def').is_file()  # the allocators the checks read (mempath_kinds.py)
    # The LLM decode's referee (`mempath llm` finds it at bin/../share/mempath/llm) and the
    # models' table it reads beside the install's other tables.
    assert os.access(share / 'llm' / 'referee.py', os.X_OK)
    assert (share / 'llm_models.def').is_file()
    assert not (share / 'llm' / 'llm_placement.py').exists()
    assert (share / 'site_configs' / 'generic.py').is_file()
    assert not (share / 'site_configs' / 'spack').exists()
    # The installed binary runs without the build tree and records the recipe's revision.
    out = subprocess.run([str(bindir / 'mempath'), '--version'], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:3] == ['mempath', '0.2.0', '(0.2.0)'], out.stdout


def installed_reframe(prefix: Path, *args: str, cwd: Path, timeout: int = 300):
    """reframe on the installed checks, PREFIX/bin first on PATH, run outside the repo."""
    local = Path(sys.executable).with_name('reframe')
    exe = str(local) if local.exists() else shutil.which('reframe')
    assert exe, 'reframe is not installed (pip install -r requirements.txt)'
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'MEMPATH_'))}
    env['PATH'] = f'{prefix / "bin"}{os.pathsep}{env.get("PATH", "")}'
    share = prefix / 'share' / 'mempath'
    return subprocess.run([exe, '-C', str(share / 'site_configs' / 'generic.py'),
                           '-c', str(share / 'reframe_checks'), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.ci
def test_installed_checks_list_without_a_build_tree(installed: Path, tmp_path: Path):
    out = installed_reframe(installed, '-l', cwd=tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert 'skipping test file' not in text, text
    found = re.search(r'^Found (\d+) check\(s\)$', out.stdout, re.MULTILINE)
    assert found and int(found.group(1)) >= 1, text
    assert re.search(r'^- MempathBandwidth %op=read %pu_kind=cpu %coverage=full /', out.stdout, re.MULTILINE), text


@pytest.mark.ci
def test_installed_check_runs_the_binary_from_path(installed: Path, tmp_path: Path):
    report = tmp_path / 'report.json'
    out = installed_reframe(installed, '-r', '-n', 'MempathBandwidth%op=read%pu_kind=cpu%coverage=acceptance',
                            '-S', 'MempathBandwidth.size=8MiB',
                            '-S', 'MempathBandwidth.in_cache=true', '-S', 'MempathBandwidth.reps=3',
                            '--prefix', str(tmp_path / 'rfm'), '--report-file', str(report),
                            cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr
    cases = json.loads(report.read_text())['runs'][0]['testcases']
    ran = [tc for tc in cases if tc['name'].startswith('MempathBandwidth')]
    assert ran and ran[0]['result'] == 'pass', ran
    # The job ran the installed binary, and nothing was built.
    build = [tc for tc in cases if tc['name'].startswith('MempathBuild')]
    assert build and 'cmake' not in (Path(build[0]['outputdir']) / 'rfm_build.sh').read_text()
    assert str(installed / 'bin' / 'mempath') in (Path(ran[0]['outputdir']) / 'rfm_job.sh').read_text()


# --- a wanted feature that is missing fails the configure with one line ------------------

@pytest.mark.parametrize('what, args, line', [
    # The recipe's own +cuda ~mpi arguments; its nvcc (of the stub's cuda prefix) is absent.
    ('cuda', None, 'mempath: MEMPATH_REQUIRE_CUDA=ON but no usable CUDA compiler was found'),
    ('nccl', ['-DMEMPATH_WITH_CUDA=OFF', '-DMEMPATH_REQUIRE_NCCL=ON', '-DMEMPATH_TESTS=OFF'],
     # NCCL not found, or (no MPI here) the MPI of mempath-mpi, its only user.
     'mempath: MEMPATH_REQUIRE_NCCL=ON but'),
])
def test_required_feature_missing_fails_in_one_line(tmp_path: Path, what, args, line):
    if args is None:
        args = recipe_args(cuda=True, mpi=False, cuda_arch=('90',))
    done = cmake('-S', str(REPO), '-B', str(tmp_path / 'b'), *args, cwd=tmp_path, timeout=300)
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    hits = [l for l in text.splitlines() if line in l]
    assert len(hits) == 1, text
    assert 'Configuring incomplete' in text
    if what == 'cuda':  # the line names the compiler looked for
        assert f'{CUDA_PREFIX}/bin/nvcc' in hits[0], hits[0]


# --- release tarball ---------------------------------------------------------------------

def test_make_tarball(tmp_path: Path):
    script = REPO / 'site_configs' / 'spack' / 'make_tarball.sh'
    if subprocess.run(['git', '-C', str(REPO), 'rev-parse'], capture_output=True).returncode:
        pytest.skip('not a git checkout (the tarball is made from git)')
    out = subprocess.run([str(script), str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    tarball = tmp_path / 'mempath-0.2.0.tar.gz'
    assert out.stdout.splitlines()[0] == str(tarball)
    digest = subprocess.run(['sha256sum', str(tarball)], capture_output=True, text=True).stdout
    assert out.stdout.splitlines()[1] == digest.strip()
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    assert all(n.startswith('mempath-0.2.0') for n in names)
    for must in ('CMakeLists.txt', 'src/CMakeLists.txt', 'reframe_checks/bandwidth.py',
                 'site_configs/spack/packages/mempath/package.py', 'pyproject.toml'):
        assert f'mempath-0.2.0/{must}' in names, must
    bad = subprocess.run([str(script), str(tmp_path / 'missing')], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


# --- pip: mempath-analysis ---------------------------------------------------------------

def _builds_wheels(python: str) -> bool:
    # setuptools >= 70.1 has bdist_wheel; older ones need the wheel package next to it.
    code = ('import setuptools, importlib.util as u; v = tuple(int(x) for x in '
            'setuptools.__version__.split(".")[:2]); '
            'raise SystemExit(0 if v >= (70, 1) or u.find_spec("wheel") else 1)')
    return subprocess.run([python, '-c', code], capture_output=True).returncode == 0


@pytest.fixture(scope='module')
def pip_target(tmp_path_factory) -> Path:
    """`pip install --no-deps --no-build-isolation --target TMP` of a copy of the sources
    (setuptools builds in the source folder: a copy keeps build/ and *.egg-info out of the
    checkout). A venv of its own with setuptools from PyPI where this Python lacks it."""
    tmp = tmp_path_factory.mktemp('pip')
    python = sys.executable
    if not _builds_wheels(python):
        venv = tmp / 'venv'
        subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
        python = str(venv / 'bin' / 'python')
        done = subprocess.run([python, '-m', 'pip', 'install', '-q', 'setuptools>=70.1'],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, 'setuptools from PyPI: ' + done.stderr
    target = tmp / 'target'
    done = subprocess.run([python, '-m', 'pip', 'install', '-q', '--no-deps',
                           '--no-build-isolation', '--target', str(target), str(sources(tmp))],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def sources(tmp: Path) -> Path:
    """TMP/src: what `pip install .` reads of the clone (setuptools builds in the source
    folder: a copy keeps build/ and *.egg-info out of the checkout)."""
    src = tmp / 'src'
    src.mkdir()
    shutil.copy(REPO / 'pyproject.toml', src)
    shutil.copytree(REPO / 'analysis', src / 'analysis',
                    ignore=shutil.ignore_patterns('__pycache__'))
    (src / 'docs').mkdir()
    shutil.copy(REPO / 'docs' / 'analysis.md', src / 'docs')
    (src / 'src' / 'core').mkdir(parents=True)
    for table in ('kinds.def', 'families.def'):
        shutil.copy(REPO / 'src' / 'core' / table, src / 'src' / 'core')
    return src


def run_installed(target: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, 'PYTHONPATH': str(target)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_pip_installs_mempath_analysis(pip_target: Path, tmp_path: Path):
    package = pip_target / 'mempath_analysis'
    source = {p.relative_to(REPO / 'analysis') for p in (REPO / 'analysis').rglob('*.py')}
    assert source == {p.relative_to(package) for p in package.rglob('*.py')}
    assert (package / 'render' / 'templates' / 'report.html.j2').is_file()
    assert (package / 'render' / 'templates' / 'report.css').is_file()
    assert not (pip_target / 'analysis').exists() and not (pip_target / 'tools').exists()
    code = ('import sys, mempath_analysis.__main__, mempath_analysis.report.write; '
            'print(mempath_analysis.__file__); '
            'print(any(m == "analysis" or m.startswith("analysis.") for m in sys.modules))')
    out = run_installed(pip_target, '-c', code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    where, bare = out.stdout.split()
    assert Path(where).parent == package and bare == 'False', out.stdout
    # The kinds and families tables come along (data-files), read from the install, not the
    # checkout.
    code = ('from mempath_analysis.results import families, kinds; print(kinds.KINDS_DEF); '
            'print(kinds.load()["alloc"]["pinned"]["page_locked"]); print(families.FAMILIES_DEF); '
            'print(families.FAMILIES["chase"].metric)')
    out = run_installed(pip_target, '-c', code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    where, pinned, families_where, chase = out.stdout.split()
    assert Path(where).is_relative_to(pip_target) and pinned == 'True', out.stdout
    assert Path(families_where).is_relative_to(pip_target) and chase == 'ns_per_access', out.stdout


def test_pip_entry_points(pip_target: Path, tmp_path: Path):
    bindir = pip_target / 'bin'
    out = run_installed(pip_target, str(bindir / 'mempath-report'), '--help', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert 'RUN.h5' in out.stdout and '--output' in out.stdout, out.stdout
    out = run_installed(pip_target, str(bindir / 'mempath-analysis'), '--help', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for command in ('report', 'compare', 'paper', 'fleet', 'fleet-summary', 'fleet-history'):
        assert command in out.stdout, (command, out.stdout)
    assert 'simulate' not in out.stdout  # the simulator is a tool of the repository (tests/fleetsim)
    # mempath-report really dispatches to report: a missing file is its one error line, exit 2.
    out = run_installed(pip_target, str(bindir / 'mempath-report'), str(tmp_path / 'none.h5'),
                        '-o', str(tmp_path / 'r'), cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    errors = out.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith('analysis: error:'), out.stderr


def test_python_m_analysis_still_works_in_the_repository():
    out = subprocess.run([sys.executable, '-m', 'analysis', '--help'], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0 and 'fleet-history' in out.stdout, out.stderr


# --- pip install . into a fresh venv outside the checkout: every documented command -------

#: The pages that list the analysis's commands (README.md and the two it names for them).
COMMAND_PAGES = ('README.md', 'docs/install.md', 'docs/analysis.md')


def documented_commands() -> set[str]:
    """Each `python -m analysis CMD`, `mempath-analysis CMD` and `mempath-report` the pages name."""
    found = set()
    for page in COMMAND_PAGES:
        text = (REPO / page).read_text()
        found |= set(re.findall(r'(?:python -m analysis|mempath-analysis) ([a-z][a-z-]*)', text))
        found |= {'mempath-report'} & set(re.findall(r'mempath-report', text))
    return found


@pytest.fixture(scope='module')
def fresh_venv(tmp_path_factory) -> Path:
    """A new venv where `pip install '.[history]'` of a copy of the sources ran, as a user
    runs it: build isolation (setuptools from the index) and the dependency resolver. The
    dependencies are the suite's own, seen through a .pth file, so that pip finds them
    installed instead of downloading numpy, pandas and matplotlib again."""
    tmp = tmp_path_factory.mktemp('fresh')
    venv = tmp / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    python = venv / 'bin' / 'python'
    purelib = subprocess.run([str(python), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, 'suite_dependencies.pth').write_text(sysconfig.get_paths()['purelib'] + '\n')
    done = subprocess.run([str(python), '-m', 'pip', 'install', '-q', f'{sources(tmp)}[history]'],
                          cwd=tmp, env=outside_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, 'pip install .[history] (setuptools from the index): ' + done.stdout + done.stderr
    return venv


def outside_env() -> dict[str, str]:
    """The environment without PYTHONPATH: nothing of the checkout can be imported."""
    return {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}


@pytest.fixture(scope='module')
def outside(fresh_venv: Path, tmp_path_factory) -> Path:
    """A folder outside the checkout holding a night of one node as vet_node.sh leaves it
    (vetting/<host>/*.h5, its retest pass under vetting/retest/round1), recorded files."""
    folder = tmp_path_factory.mktemp('outside')
    assert not folder.resolve().is_relative_to(REPO)
    for name in ('h100_allocmatrix.h5', 'h100_chase_cpu.h5'):
        for where in ('vetting/h100', 'vetting/retest/round1/h100'):
            (folder / where).mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / 'tests' / 'python' / 'data' / name, folder / where / name)
    return folder


#: Each documented command, as the pages show it, on the recorded night; what it must write.
DOCUMENTED = {
    'report': (['mempath-analysis', 'report', 'vetting/h100/h100_allocmatrix.h5', '-o', 'report'],
               'report/index.html'),
    'mempath-report': (['mempath-report', 'vetting/h100/h100_chase_cpu.h5', '-o', 'report2'],
                       'report2/summary.md'),
    'compare': (['mempath-analysis', 'compare', 'vetting/h100', 'vetting/retest/round1/h100',
                 '--output', 'compare'], 'compare/compare.md'),
    'paper': (['mempath-analysis', 'paper', 'vetting', '-o', 'paper'], 'paper/index.html'),
    'fleet': (['mempath-analysis', 'fleet', 'vetting', '-o', 'fleet'], 'fleet/nodes.csv'),
    'fleet --retest': (['mempath-analysis', 'fleet', 'vetting', '--retest', 'vetting/retest',
                        '-o', 'fleet2'], 'fleet2/nodes.csv'),
    'fleet-history': (['mempath-analysis', 'fleet-history', 'append', '--db', 'fleet.duckdb',
                       'vetting'], 'fleet.duckdb'),
    'fleet-summary': (['mempath-analysis', 'fleet-summary', 'vetting/h100'],
                      'vetting/h100/fleet-summary.json'),
}


def test_every_documented_command_is_run_below():
    documented = documented_commands()
    assert {'report', 'compare', 'paper', 'fleet', 'fleet-history', 'mempath-report'} <= documented
    assert documented <= {c.split()[0] for c in DOCUMENTED}, documented - {c.split()[0] for c in DOCUMENTED}


@pytest.mark.ci  # pip's build isolation fetches setuptools from the index
@pytest.mark.parametrize('command', list(DOCUMENTED))
def test_the_fresh_venv_runs_a_documented_command_outside_the_checkout(fresh_venv: Path, outside: Path,
                                                                       command: str):
    argv, writes = DOCUMENTED[command]
    out = subprocess.run([str(fresh_venv / 'bin' / argv[0]), *argv[1:]], cwd=outside,
                         env=outside_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (outside / writes).is_file(), out.stdout + out.stderr
    assert 'Traceback' not in out.stderr


@pytest.mark.ci  # pip's build isolation fetches setuptools from the index
@pytest.mark.parametrize('module, call', [
    pytest.param('slurm.inventory', "m.write(Path(out), [{c: 0 if c in ('rank', 'local_rank') else 'v' for c in m.COLUMNS}])",
                 id='slurm.inventory'),
])
def test_a_python_that_pip_installed_the_analysis_runs_the_scripts_as_modules(fresh_venv: Path, tmp_path: Path,
                                                                             module, call):
    """A centre's Python where `pip install .` put the analysis runs the clone's scripts the
    one way (docs/design.md, "how a script outside the analysis reaches it"): a module from
    the clone's root, which writes through the clone's analysis/; no path edit, no PYTHONPATH."""
    code = ("import importlib, sys; from pathlib import Path\n"
            "m = importlib.import_module(sys.argv[1]); out = sys.argv[2]\n"
            f"{call}\n"
            "import analysis; print(analysis.__file__)")
    out = subprocess.run([str(fresh_venv / 'bin' / 'python'), '-c', code, module, str(tmp_path / 'run.h5')],
                         cwd=REPO, env=outside_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_relative_to(REPO / 'analysis') and (tmp_path / 'run.h5').is_file()


#: A path edit (sys.path's insert, append or extend, an item or slice assigned, the list
#: replaced), a module loaded by its file name, PYTHONPATH set.
PATH_EDIT = re.compile(rb'sys\.path\s*(\.\s*(insert|append|extend)\s*\(|\[[^\]\n]*\]\s*=[^=]|\+?=[^=])'
                       rb'|spec_from_file_location|SourceFileLoader'
                       rb'|\bPYTHONPATH=|[\'"]PYTHONPATH[\'"]\s*:|environ\[\s*[\'"]PYTHONPATH[\'"]\s*\]\s*=[^=]')
NEWLINE = b'\n'


def test_no_tracked_file_outside_the_tests_edits_the_path_or_loads_a_file():
    """One way for a script to reach the analysis, or a module of the repository its sibling
    (docs/design.md, "how a script outside the analysis reaches it"): it runs as a module from
    the repository root (`python -m slurm.inventory`, `python -m analysis`), and the ReFrame
    checks find theirs through ReFrame's own loader. So no tracked file outside tests/ (Python,
    shell, batch scripts, CI, docs) edits sys.path, loads a module by its file name or sets
    PYTHONPATH; and no link into analysis/ that a copy of the tree or an install could lose.
    The scripts recorded beside a device run's results (docs/results/raw/) are what ran on a
    lent machine with its packages installed by `pip --target`: records, not the project's."""
    tracked = subprocess.run(['git', 'ls-files', '-z'], cwd=REPO, capture_output=True)
    if tracked.returncode != 0:
        pytest.skip('not a git checkout')
    files = [REPO / name for name in tracked.stdout.decode().split('\0') if name and not name.startswith(('tests/', 'docs/results/raw/'))]
    assert any(p.name == 'inventory.py' for p in files)
    found = [f'{p.relative_to(REPO)}:{text.count(NEWLINE, 0, m.start()) + 1}: {m.group(0).decode(errors="replace")}'
             for p in files if p.is_file() and not p.is_symlink()
             for text in [p.read_bytes()] for m in PATH_EDIT.finditer(text)]
    assert found == []
    parts = ('src', 'slurm', 'analysis', 'reframe_checks', 'site_configs')
    assert [str(p.relative_to(REPO)) for part in parts for p in (REPO / part).rglob('*') if p.is_symlink()] == []


def test_pyproject_declares_every_third_party_import():
    tomllib = pytest.importorskip('tomllib')
    project = tomllib.loads((REPO / 'pyproject.toml').read_text())['project']
    declared = {re.match(r'[\w-]+', d).group(0).lower().replace('-', '_')
                for d in project['dependencies'] + sum(project['optional-dependencies'].values(), [])}
    assert all(re.search(r'>=\d', d) for d in project['dependencies']), project['dependencies']
    imported = set()
    for path in (REPO / 'analysis').rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split('.')[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split('.')[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names}
    assert third_party and third_party <= declared, third_party - declared
    # requirements.txt stays the lock file: every declared dependency pinned there.
    pinned = {l.split('==')[0].lower().replace('-', '_')
              for l in (REPO / 'requirements.txt').read_text().splitlines() if '==' in l}
    assert declared <= pinned, declared - pinned
