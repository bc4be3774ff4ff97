#!/usr/bin/env bash
# The suite on this machine (README, first command): builds mempath, runs the ReFrame
# checks with the generic site configuration (local scheduler; CPU checks everywhere,
# GPU checks where a GPU is found), then writes the report from the HDF5 files. Before
# the checks run it prints their expected duration on this node (expected_duration.py).
#   MEMPATH_TAG     ReFrame tag to run (default: full; acceptance = the nightly subset)
#   MEMPATH_REPORT  report folder (default: report/HOST-DATE)
set -euo pipefail
source "$(dirname "$0")/../site_configs/setup_env.sh"
cd "$mempath_root"
if [ -z "${MEMPATH_REFRAME:-}" ]; then
  echo "mempath: ReFrame not found: no reframe command on PATH and no reframe module in python3; valid: pip install reframe-hpc (what the setup does without MEMPATH_NO_PIP), or put reframe on PATH" >&2
  exit 2
fi
tag="${MEMPATH_TAG:-full}"
stamp="$(hostname -s)-$(date -u +%Y%m%dT%H%M%S)"
report="${MEMPATH_REPORT:-$mempath_root/report/$stamp}"
prefix="$mempath_root/output/$stamp"
mkdir -p "$report"
"$MEMPATH_BIN" topo | tee "$report/topology.txt"
# The modelled duration of what is about to run (a factor of ~2); never stops the suite.
python3 "$mempath_root/reframe_checks/expected_duration.py" --mempath "$MEMPATH_BIN" --reframe "$MEMPATH_REFRAME" \
  --config site_configs/generic.py --tag "$tag" -- "$@" || true
set +e
started=$SECONDS
echo "mempath: running the checks (--tag $tag) with ReFrame ..." >&2
# shellcheck disable=SC2086  # MEMPATH_REFRAME is a command line (setup_env.sh)
$MEMPATH_REFRAME -C site_configs/generic.py -c reframe_checks --tag "$tag" -r \
  --prefix "$prefix" --exec-policy=serial "$@"
rc=$?
echo "mempath: running the checks: done in $((SECONDS - started)) s (ReFrame exit code $rc)" >&2
set -e
mapfile -t runs < <(find "$prefix/output" -name '*.h5' 2>/dev/null | sort)
if [ ${#runs[@]} -eq 0 ]; then
  echo "mempath: no HDF5 results under $prefix/output (ReFrame exit code $rc)" >&2
  exit 1
fi
mempath_timed "writing the report of ${#runs[@]} result files" python -m analysis report "${runs[@]}" -o "$report"
echo "mempath: report in $report (ReFrame exit code $rc; the whole suite took $SECONDS s)"
exit $rc
