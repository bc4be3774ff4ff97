#!/usr/bin/env bash
# The nightly acceptance path (docs/reframe.md): ReFrame's acceptance checks, the report of
# tonight's HDF5 files, and their comparison with the last good night. Exits non-zero when a
# check failed or a case regressed (one line per case on stderr); a good night becomes
# `last-good`. Needs the Python environment (site_configs/setup_env.sh) and a built mempath.
#   MEMPATH_NIGHTLY_DIR  nights are kept here (default: ./nightly)
#   MEMPATH_SITE         site configuration in site_configs/ (default: alps)
#   MEMPATH_REFRAME      the ReFrame command (default: reframe)
#   MEMPATH_PYTHON       the Python with the analysis package (default: python3)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${MEMPATH_NIGHTLY_DIR:-$PWD/nightly}
night="$dir/$(date -u +%Y%m%dT%H%M%S)"
python=${MEMPATH_PYTHON:-python3}
mkdir -p "$night"
# ReFrame keeps its own run report and performance log (with each variable's reference) here.
${MEMPATH_REFRAME:-reframe} -C "$root/site_configs/${MEMPATH_SITE:-alps}.py" -c "$root/reframe_checks" \
  -r --tag acceptance --prefix "$night/rfm" --report-file "$night/reframe-report.json" \
  --perflogdir "$night/perflogs"
rc=$?
mapfile -t runs < <(find "$night/rfm/output" -name '*.h5' 2>/dev/null | sort)
if [ ${#runs[@]} -eq 0 ]; then
  echo "nightly: no HDF5 results under $night/rfm/output (ReFrame exit code $rc)" >&2
  exit 1
fi
(cd "$root" && "$python" -m analysis report "${runs[@]}" -o "$night/report") || echo "nightly: the report failed" >&2
cmp=0
if [ -d "$dir/last-good" ]; then
  (cd "$root" && "$python" -m analysis compare "$dir/last-good/rfm/output" "$night/rfm/output" \
    --output "$night/compare") > /dev/null
  cmp=$?
else
  echo "nightly: no last good night yet; tonight is the first reference"
fi
if [ $rc -ne 0 ]; then
  echo "nightly: ReFrame reported failed checks (exit code $rc); last-good stays $(readlink "$dir/last-good" 2>/dev/null || echo unset)" >&2
  exit 1
fi
if [ $cmp -ne 0 ]; then
  echo "nightly: regression against $(readlink "$dir/last-good"); last-good unchanged" >&2
  exit 1
fi
ln -sfn "$night" "$dir/last-good"
echo "nightly: $night is the new last-good"
