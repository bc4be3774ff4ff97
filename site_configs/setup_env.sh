# shellcheck shell=bash
# Sourced by the README's commands and by CI: makes the Python environment and the build
# that everything else runs from. Idempotent; re-running only redoes what changed.
#   MEMPATH_BUILD_DIR   build folder (default: build)
#   MEMPATH_CMAKE_ARGS  extra CMake options (e.g. -DMEMPATH_WITH_CUDA=OFF)
#   MEMPATH_NO_APT=1    never call apt-get (clusters provide compilers/HDF5/libnuma as modules)
#   MEMPATH_PYTHON      the Python 3.11+ that makes the environment (default: python3)
#   MEMPATH_VENV        the Python environment (default: .venv); prepare it once on a login
#                       node, on a file system the compute nodes see (docs/install.md)
#   MEMPATH_WHEELHOUSE  install from this folder of wheels only, never from an index
#   MEMPATH_NO_PIP=1    never call pip (compute nodes without internet): use MEMPATH_VENV as
#                       it is, or the Python of MEMPATH_PYTHON when it has the packages
# Sourcing changes only PATH, MEMPATH_BIN, MEMPATH_REFRAME and the mempath_* names: the caller's shell
# options (errexit, nounset, pipefail) and working directory stay as they were, so a
# script's own `set -e` keeps guarding what it runs next. Scripts that need the
# repository root cd to "$mempath_root" themselves. Returns non-zero when a step failed.
mempath_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# mempath_timed WHAT CMD...: runs CMD between a line that says what starts and one that says
# how long it took, so a first setup (minutes of apt, pip and the build) is never silent.
mempath_timed() {
  local what=$1 start=$SECONDS
  shift
  echo "mempath: $what ..." >&2
  "$@" || return
  echo "mempath: $what: done in $((SECONDS - start)) s" >&2
}

mempath_system_packages() {
  # Debian/Ubuntu as root: install what the build needs if it is missing.
  [ "${MEMPATH_NO_APT:-0}" = 1 ] && return 0
  command -v apt-get >/dev/null && command -v dpkg-query >/dev/null || return 0
  [ "$(id -u)" = 0 ] || return 0
  local pkgs=(cmake g++ make pkg-config python3-venv libhdf5-dev libnuma-dev numactl libgtest-dev git)
  local missing=() p
  for p in "${pkgs[@]}"; do
    # A tool on PATH counts whoever installed it (a compute node's image may have cmake from
    # pip, not from Debian); libraries only by their package.
    case $p in cmake|g++|make|pkg-config|numactl|git) command -v "$p" >/dev/null && continue ;; esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  # A node without a package mirror (a compute node) builds with what it has: one line, not a
  # stop; the build then says what it lacks.
  mempath_timed "installing ${missing[*]} (apt-get)" mempath_apt_install "${missing[@]}" ||
    echo "mempath: apt-get could not install ${missing[*]} (no package mirror?); building with what is here" >&2
  return 0
}

mempath_apt_install() {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# What the suite and the tests import; the pinned versions are in requirements.txt.
mempath_python_modules=(reframe h5py numpy pandas matplotlib scipy jinja2)

# Python 3.11 or newer: the oldest the pinned numpy, pandas and scipy install on.
mempath_python_ok() {
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

mempath_has_modules() {
  local python=$1 code="import importlib.util, sys; missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]; print(' '.join(missing)); sys.exit(bool(missing))"
  "$python" -c "$code" "${mempath_python_modules[@]}"
}

mempath_python_env() {
  local python="${MEMPATH_PYTHON:-python3}" venv="${MEMPATH_VENV:-$mempath_root/.venv}"
  local stamp="$venv/.requirements" missing
  if [ "${MEMPATH_NO_PIP:-0}" = 1 ]; then
    # Offline: whatever is prepared is used as it is, and nothing is installed.
    if [ -x "$venv/bin/python" ]; then
      missing=$(mempath_has_modules "$venv/bin/python") || {
        echo "mempath: MEMPATH_NO_PIP=1, and $venv lacks $missing: prepare it on a node with internet (docs/install.md)" >&2
        return 1; }
      export PATH="$venv/bin:$PATH"
      return 0
    fi
    mempath_python_ok "$python" || {
      echo "mempath: MEMPATH_NO_PIP=1 and no environment at $venv; $python is not Python 3.11+ (set MEMPATH_VENV or MEMPATH_PYTHON)" >&2
      return 1; }
    missing=$(mempath_has_modules "$python") || {
      echo "mempath: MEMPATH_NO_PIP=1, no environment at $venv, and $python lacks $missing (set MEMPATH_VENV to one prepared on a login node; docs/install.md)" >&2
      return 1; }
    export PATH="$(dirname "$(command -v "$python")"):$PATH"
    return 0
  fi
  if [ ! -x "$venv/bin/python" ]; then
    mempath_python_ok "$python" || {
      echo "mempath: Python 3.11 or newer is needed ($python is $("$python" -V 2>&1 | head -n 1)); set MEMPATH_PYTHON=/path/to/python3.11" >&2
      return 1; }
    mempath_timed "creating the Python environment $venv" "$python" -m venv "$venv" || return 1
  fi
  if ! cmp -s "$mempath_root/requirements.txt" "$stamp"; then
    local from=()
    [ -n "${MEMPATH_WHEELHOUSE:-}" ] && from=(--no-index --find-links "$MEMPATH_WHEELHOUSE")
    mempath_timed "installing the Python packages of requirements.txt into $venv (pip)" \
      mempath_pip_install "$venv/bin/python" "${from[@]}" && cp "$mempath_root/requirements.txt" "$stamp" || return 1
  fi
  export PATH="$venv/bin:$PATH"
}

mempath_pip_install() {  # PYTHON [--no-index --find-links DIR]
  local python=$1
  shift
  { [ $# -gt 0 ] || "$python" -m pip install -q --upgrade pip; } &&
    "$python" -m pip install -q "$@" -r "$mempath_root/requirements.txt"
}

# mempath_reframe: MEMPATH_REFRAME, the ReFrame command (a string the scripts split at
# spaces): `reframe` on PATH, else the reframe module of the environment's python3 through
# site_configs/run_reframe.py (a ReFrame installed with pip --target has its module on
# PYTHONPATH and no command on PATH); left unset where there is neither (the tests need no
# ReFrame; run_suite.sh says so in one line).
mempath_reframe() {
  [ -n "${MEMPATH_REFRAME:-}" ] && return 0
  if command -v reframe >/dev/null; then
    export MEMPATH_REFRAME=reframe
  elif python3 -c 'import reframe.frontend.cli' 2>/dev/null; then
    export MEMPATH_REFRAME="python3 $mempath_root/site_configs/run_reframe.py"
    echo "mempath: no reframe command on PATH; using python3's reframe module ($MEMPATH_REFRAME)" >&2
  fi
  return 0
}

mempath_build() {
  local dir="${MEMPATH_BUILD_DIR:-$mempath_root/build}"
  mempath_timed "building mempath in $dir (cmake${MEMPATH_CMAKE_ARGS:+ $MEMPATH_CMAKE_ARGS}; a first build takes minutes)" \
    mempath_cmake "$dir" || return 1
  export PATH="$dir:$PATH"
  export MEMPATH_BIN="$dir/mempath"
}

mempath_cmake() {  # DIR
  # shellcheck disable=SC2086
  cmake -S "$mempath_root/src" -B "$1" -DCMAKE_BUILD_TYPE=Release ${MEMPATH_CMAKE_ARGS:-} >/dev/null &&
    cmake --build "$1" -j "$(nproc)" >/dev/null
}

# Each step is checked by hand instead of with `set -e`: errexit would have to be switched
# on and back off around the steps (the old trailing `set +e` turned off the caller's own),
# and in an interactive shell a failed step would close the terminal.
mempath_setup() {
  local step
  for step in mempath_system_packages mempath_python_env mempath_reframe mempath_build; do
    "$step" || { echo "mempath: setup failed in $step (site_configs/setup_env.sh)" >&2; return 1; }
  done
}

mempath_setup
