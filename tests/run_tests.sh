#!/usr/bin/env bash
# The test command (README): C++ unit tests through ctest, then pytest (Python, the CLI
# end to end, analysis on real results, ReFrame listing and a local ReFrame run).
# GPU tests skip without a GPU; run them on a GPU node with the same command.
set -euo pipefail
source "$(dirname "$0")/../site_configs/setup_env.sh"
cd "$mempath_root"
# A CPU-only build as well: the GPU-less path of the CLI is part of what is tested.
( MEMPATH_BUILD_DIR="$mempath_root/build-cpu" MEMPATH_CMAKE_ARGS="-DMEMPATH_WITH_CUDA=OFF -DMEMPATH_TESTS=OFF" mempath_build )
export MEMPATH_CPU_ONLY_BIN="$mempath_root/build-cpu/mempath"
ctest --test-dir build --output-on-failure
python -m pytest tests/python "$@"
