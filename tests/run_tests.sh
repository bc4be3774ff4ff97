#!/usr/bin/env bash
# The test command (README): C++ unit tests through ctest, then pytest (Python, the CLI
# end to end, analysis on real results, ReFrame listing and a local ReFrame run).
# GPU tests skip without a GPU; run them on a GPU node with the same command. Arguments go
# to pytest (`tests/run_tests.sh -k chase`, `tests/run_tests.sh tests/python/test_mpi.py`).
# pytest runs on MEMPATH_TEST_WORKERS processes (pytest-xdist; default: one per CPU and one
# more, 3 to 8: a worker that waits on a watchdog or a hung reader leaves its CPU to the
# extra one; 3 on 2 cores took 10 min 38 s where 2 took 12 min 30 s, two per CPU no less
# than one); 0 runs it in this process. Tests
# marked `ci` (their own builds of mempath) are left to CI's pass unless MEMPATH_CI_TESTS=1
# (docs/testing.md, "Two tiers").
# Exit status: non-zero when the setup, the build, ctest or pytest failed (pytest's own
# status when it failed, else ctest's), so CI never reads a failed run as a pass.
set -euo pipefail
source "$(dirname "$0")/../site_configs/setup_env.sh"
cd "$mempath_root"
# A CPU-only build as well: the GPU-less path of the CLI is part of what is tested.
( MEMPATH_BUILD_DIR="$mempath_root/build-cpu" MEMPATH_CMAKE_ARGS="-DMEMPATH_WITH_CUDA=OFF -DMEMPATH_TESTS=OFF" mempath_build )
export MEMPATH_CPU_ONLY_BIN="$mempath_root/build-cpu/mempath"
# Figures as PNG alone (no PDF): drawn, checked and written as always, a third of each
# report's time saved; MEMPATH_FIGURES=all writes the PDFs too, as the suite does (docs/testing.md).
export MEMPATH_FIGURES="${MEMPATH_FIGURES:-png}"
# Compiled Python kept for the next process, outside the tree: under PYTHONDONTWRITEBYTECODE=1
# (this VM's shell sets it) every `python -m analysis` a test starts compiled the analysis
# package again, and each pytest worker rewrote every test file again: 1.5 min of CPU a pass.
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/mempath/pycache}"
unset PYTHONDONTWRITEBYTECODE
# pytest runs even after a ctest failure: one run reports both.
ctest_rc=0 pytest_rc=0
ctest --test-dir build --output-on-failure || ctest_rc=$?
# pytest's arguments; test files or folders among them replace the default tests/python.
targets=(tests/python)
for arg in "$@"; do
  [ -e "${arg%%::*}" ] && { targets=(); break; }
done
cpus=$(nproc)
workers=${MEMPATH_TEST_WORKERS:-$(( cpus + 1 < 3 ? 3 : cpus + 1 > 8 ? 8 : cpus + 1 ))}
parallel=(-n "$workers" --dist loadfile)
if ! python -c 'import xdist' 2>/dev/null; then
  # An environment prepared without it (MEMPATH_NO_PIP=1 on an offline node): serial.
  echo "run_tests.sh: pytest-xdist is not installed: the tests run in one process (slower)" >&2
  parallel=()
fi
python -m pytest "${parallel[@]}" "${targets[@]}" "$@" || pytest_rc=$?
[ "$ctest_rc" -eq 0 ] || echo "run_tests.sh: ctest failed (exit $ctest_rc)" >&2
[ "$pytest_rc" -eq 0 ] || echo "run_tests.sh: pytest failed (exit $pytest_rc)" >&2
[ "$pytest_rc" -ne 0 ] && exit "$pytest_rc"
exit "$ctest_rc"
