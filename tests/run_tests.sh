#!/usr/bin/env bash
# The test command (README): C++ unit tests through ctest, then pytest (Python, the CLI
# end to end, analysis on real results, ReFrame listing and a local ReFrame run).
# GPU tests skip without a GPU; run them on a GPU node with the same command. Arguments go
# to pytest (`tests/run_tests.sh -k chase`, `tests/run_tests.sh tests/python/test_mpi.py`).
# Exit status: non-zero when the setup, the build, ctest or pytest failed (pytest's own
# status when it failed, else ctest's), so CI never reads a failed run as a pass (issue 12).
set -euo pipefail
source "$(dirname "$0")/../site_configs/setup_env.sh"
cd "$mempath_root"
# A CPU-only build as well: the GPU-less path of the CLI is part of what is tested.
( MEMPATH_BUILD_DIR="$mempath_root/build-cpu" MEMPATH_CMAKE_ARGS="-DMEMPATH_WITH_CUDA=OFF -DMEMPATH_TESTS=OFF" mempath_build )
export MEMPATH_CPU_ONLY_BIN="$mempath_root/build-cpu/mempath"
# pytest runs even after a ctest failure: one run reports both.
ctest_rc=0 pytest_rc=0
ctest --test-dir build --output-on-failure || ctest_rc=$?
# pytest's arguments; test files or folders among them replace the default tests/python.
targets=(tests/python)
for arg in "$@"; do
  [ -e "${arg%%::*}" ] && { targets=(); break; }
done
python -m pytest "${targets[@]}" "$@" || pytest_rc=$?
[ "$ctest_rc" -eq 0 ] || echo "run_tests.sh: ctest failed (exit $ctest_rc)" >&2
[ "$pytest_rc" -eq 0 ] || echo "run_tests.sh: pytest failed (exit $pytest_rc)" >&2
[ "$pytest_rc" -ne 0 ] && exit "$pytest_rc"
exit "$ctest_rc"
