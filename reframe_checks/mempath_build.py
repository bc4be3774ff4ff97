"""Build fixture: the installed mempath when there is one (uenv, Spack, `cmake --install`:
`mempath` on PATH, or the variable `mempath_bin`), else the binary compiled from this
repository's src/ with CMake.

Used with scope 'environment' so that it is built once per partition and programming
environment and shared by every check that runs there.

Extra CMake options come from the variable `cmake_options`, whose default is the
environment variable MEMPATH_CMAKE_ARGS (the same one site_configs/setup_env.sh reads),
e.g. `-DMEMPATH_WITH_CUDA=OFF` or `-DCMAKE_CUDA_ARCHITECTURES=90`. From the command line:
`-S MempathBuild.cmake_options=-DMEMPATH_WITH_CUDA=OFF`.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.pipeline import RegressionTestPlugin

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))


#: Wall-clock limit of building mempath or nccl-tests in a job (never hang a job).
BUILD_TIME_LIMIT = '1h'


def _git_dir(repo: str) -> str | None:
    try:
        out = subprocess.run(['git', '-C', repo, 'rev-parse', '--absolute-git-dir'],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


class Prebuilt(RegressionTestPlugin):
    """A build fixture that builds nothing where its program is installed already: a
    centre's checks run the binary its uenv or Spack installed (what was vetted), and an
    installed tree has no sources to build. The subclass's variable `prebuilt_var` names
    the program's path ('' = build it)."""

    prebuilt_var = ''

    @property
    def prebuilt(self) -> str:
        return getattr(self, self.prebuilt_var)

    @run_after('init')
    def use_prebuilt(self):
        if self.prebuilt:
            self.sourcesdir = None
            self.build_locally = True
            self.build_system = 'CustomBuild'
            self.build_system.commands = ['true']


class MempathBuild(rfm.CompileOnlyRegressionTest, Prebuilt):
    """`mempath_bin` when set (default: `mempath` on PATH), else a CMake build of src/
    whose binary is `<stagedir>/<builddir>/mempath`."""

    descr = 'Build mempath (CMake)'
    build_system = 'CMake'
    sourcesdir = os.path.join(REPO_ROOT, 'src')
    builddir = 'build'
    # Build in a job on the partition: it sees the run's uenv/modules (Alps mounts a uenv
    # per job), and the compilers of the nodes measured.
    build_locally = False
    build_time_limit = BUILD_TIME_LIMIT

    #: The installed binary to run instead of building one; mempath-mpi beside it.
    mempath_bin = variable(str, value=shutil.which('mempath') or '')
    prebuilt_var = 'mempath_bin'

    #: Extra CMake configure options.
    cmake_options = variable(typ.List[str],
                             value=shlex.split(os.environ.get('MEMPATH_CMAKE_ARGS', '')))
    #: CMake build type.
    build_type = variable(str, value='Release')
    #: Parallel build jobs.
    build_jobs = variable(int, value=8)

    @run_before('compile')
    def configure(self):
        if self.prebuilt:
            return
        self.build_system.builddir = self.builddir
        self.build_system.max_concurrency = self.build_jobs
        # The C++ unit tests live outside src/ and are not part of the staged copy.
        self.build_system.config_opts = [f'-DCMAKE_BUILD_TYPE={self.build_type}',
                                         '-DMEMPATH_TESTS=OFF', *self.cmake_options]
        self.build_system.build_opts = []

    @run_before('compile')
    def describe_the_repository(self):
        if self.prebuilt:
            return
        # The build records `git describe` of its sources (provenance); the staged copy of
        # src/ is no repository, so point git at the one it was copied from.
        git_dir = _git_dir(REPO_ROOT)
        if git_dir:
            self.env_vars['GIT_DIR'] = git_dir
            self.env_vars['GIT_WORK_TREE'] = REPO_ROOT

    @property
    def executable_path(self) -> str:
        return self.prebuilt or os.path.join(self.stagedir, self.builddir, 'mempath')

    @property
    def mpi_executable_path(self) -> str:
        """mempath-mpi, built where CMake found MPI (scale-out checks)."""
        if self.prebuilt:
            return os.path.join(os.path.dirname(self.prebuilt), 'mempath-mpi')
        return os.path.join(self.stagedir, self.builddir, 'mempath-mpi')

    @sanity_function
    def binary_built(self):
        return sn.assert_true(os.path.isfile(self.executable_path),
                              msg=f'mempath was not built: {self.executable_path} missing')
