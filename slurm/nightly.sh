#!/usr/bin/env bash
# The nightly acceptance path (docs/reframe.md): ReFrame's acceptance checks, the report of
# tonight's HDF5 files, and their comparison with the last good night. Exits non-zero when a
# check failed or a case regressed (one line per case on stderr); a night becomes `last-good`
# only when ReFrame passed, the report succeeded, and compare exited 0 having compared at
# least one case (compare exit 1: regression, 2: unusable input or nothing comparable). Needs the Python environment (site_configs/setup_env.sh) and a built mempath.
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
keep="last-good stays $(readlink "$dir/last-good" 2>/dev/null || echo unset)"
(cd "$root" && "$python" -m analysis report "${runs[@]}" -o "$night/report")
report=$?
# The first night is compared with itself: a reference must hold at least one valid case.
reference="$dir/last-good"
[ -d "$reference" ] || { reference=$night; echo "nightly: no last good night yet; tonight is the first reference"; }
(cd "$root" && "$python" -m analysis compare "$reference/rfm/output" "$night/rfm/output" \
  --output "$night/compare") > "$night/compare.out"
cmp=$?
# Exit 0 alone is not enough: the compare line must also say that cases were compared.
compared=$(sed -n 's/^# Comparison: \([0-9][0-9]*\) cases compared.*/\1/p' "$night/compare.out")
if [ $rc -ne 0 ]; then
  echo "nightly: ReFrame reported failed checks (exit code $rc); $keep" >&2
  exit 1
fi
if [ $report -ne 0 ]; then
  echo "nightly: the report failed (exit code $report; the lines above say why); $keep" >&2
  exit 1
fi
case $cmp in
  0) ;;
  1) echo "nightly: regression against $(readlink -f "$reference"); $keep" >&2; exit 1 ;;
  2) echo "nightly: nothing comparable or unusable results (compare exit code 2); $keep" >&2; exit 1 ;;
  *) echo "nightly: compare failed (exit code $cmp); $keep" >&2; exit 1 ;;
esac
if [ "${compared:-0}" -lt 1 ]; then
  echo "nightly: compare compared no case; $keep" >&2
  exit 1
fi
ln -sfn "$night" "$dir/last-good"
echo "nightly: $night is the new last-good ($compared cases compared)"
