# shellcheck shell=bash
# Sourced by the README's commands and by CI: makes the Python environment and the build
# that everything else runs from. Idempotent; re-running only redoes what changed.
#   MEMPATH_BUILD_DIR   build folder (default: build)
#   MEMPATH_CMAKE_ARGS  extra CMake options (e.g. -DMEMPATH_WITH_CUDA=OFF)
#   MEMPATH_NO_APT=1    never call apt-get (clusters provide compilers/HDF5/libnuma as modules)
# Sourcing changes only PATH, MEMPATH_BIN and the mempath_* names: the caller's shell
# options (errexit, nounset, pipefail) and working directory stay as they were, so a
# script's own `set -e` keeps guarding what it runs next (issue 12). Scripts that need the
# repository root cd to "$mempath_root" themselves. Returns non-zero when a step failed.
mempath_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mempath_system_packages() {
  # Debian/Ubuntu as root: install what the build needs if it is missing.
  [ "${MEMPATH_NO_APT:-0}" = 1 ] && return 0
  command -v apt-get >/dev/null && command -v dpkg-query >/dev/null || return 0
  [ "$(id -u)" = 0 ] || return 0
  local pkgs=(cmake g++ make pkg-config python3-venv libhdf5-dev libnuma-dev numactl libgtest-dev git)
  local missing=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "mempath: installing ${missing[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

mempath_python_env() {
  local venv="$mempath_root/.venv" stamp="$mempath_root/.venv/.requirements"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || return 1
  if ! cmp -s "$mempath_root/requirements.txt" "$stamp"; then
    "$venv/bin/python" -m pip install -q --upgrade pip &&
      "$venv/bin/python" -m pip install -q -r "$mempath_root/requirements.txt" &&
      cp "$mempath_root/requirements.txt" "$stamp" || return 1
  fi
  export PATH="$venv/bin:$PATH"
}

mempath_build() {
  local dir="${MEMPATH_BUILD_DIR:-$mempath_root/build}"
  # shellcheck disable=SC2086
  cmake -S "$mempath_root/src" -B "$dir" -DCMAKE_BUILD_TYPE=Release ${MEMPATH_CMAKE_ARGS:-} >/dev/null &&
    cmake --build "$dir" -j "$(nproc)" >/dev/null || return 1
  export PATH="$dir:$PATH"
  export MEMPATH_BIN="$dir/mempath"
}

# Each step is checked by hand instead of with `set -e`: errexit would have to be switched
# on and back off around the steps (the old trailing `set +e` turned off the caller's own),
# and in an interactive shell a failed step would close the terminal.
mempath_setup() {
  local step
  for step in mempath_system_packages mempath_python_env mempath_build; do
    "$step" || { echo "mempath: setup failed in $step (site_configs/setup_env.sh)" >&2; return 1; }
  done
}

mempath_setup
