#!/usr/bin/env bash
# The nightly acceptance path (docs/reframe.md): ReFrame's acceptance checks, the report of
# tonight's HDF5 files, and their comparison with the baseline: the last good night's result
# files, kept in a history database (python -m analysis fleet-history baseline-store) with
# the night they came from, so that a purge of the scratch folder the nights live in cannot
# take the reference away. Exits non-zero when a check failed or a case regressed (one line
# per case on stderr); a night becomes the baseline (and `last-good`, a link for people)
# only when ReFrame passed, the report succeeded, and compare exited 0 having compared at
# least one case (compare exit 1: regression, 2: unusable input or nothing comparable).
# No baseline in the database is exit 2 before anything runs, never a silent new reference:
# the first night of a series is asked for with MEMPATH_NIGHTLY_FIRST=1. Needs the Python
# environment (site_configs/setup_env.sh) and a built mempath.
#   MEMPATH_NIGHTLY_DIR     nights are kept here (default: ./nightly; relative to the
#                           current folder)
#   MEMPATH_NIGHTLY_DB      the database holding the baseline; not on a purged file system
#                           (default: ${XDG_DATA_HOME:-$HOME/.local/share}/mempath/nightly.duckdb)
#   MEMPATH_NIGHTLY_SERIES  the baseline's name in the database (default: the absolute
#                           MEMPATH_NIGHTLY_DIR, so several nightlies can share one database)
#   MEMPATH_NIGHTLY_FIRST   1: there is no baseline yet, tonight is compared with itself and
#                           becomes the first one (refused while a baseline exists)
#   MEMPATH_SITE            site configuration in site_configs/ (default: alps)
#   MEMPATH_REFRAME         the ReFrame command (default: reframe)
#   MEMPATH_PYTHON          the Python with the analysis package (default: python3)
# Under Slurm (nightly_acceptance.sbatch), ReFrame is ended MEMPATH_NIGHTLY_RESERVE seconds
# (default 600) before the job's end (slurm/job_clock.sh), so the report and the comparison
# of what ran still happen.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Absolute before anything: the analysis runs from the repository's folder.
absolute() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
dir=$(absolute "${MEMPATH_NIGHTLY_DIR:-nightly}")
db=$(absolute "${MEMPATH_NIGHTLY_DB:-${XDG_DATA_HOME:-$HOME/.local/share}/mempath/nightly.duckdb}")
series=${MEMPATH_NIGHTLY_SERIES:-$dir}
first=${MEMPATH_NIGHTLY_FIRST:-0}
stamp=$(date -u +%Y%m%dT%H%M%S)
# A night started again within the same second (by hand) gets a folder of its own.
first_stamp=$stamp
for ((n = 2; n < 100; n++)); do [[ -e $dir/$stamp ]] || break; stamp=$first_stamp-$n; done
night="$dir/$stamp"
python=${MEMPATH_PYTHON:-python3}
# shellcheck source=slurm/job_clock.sh
source "$root/slurm/job_clock.sh"
job_clock_start "${MEMPATH_NIGHTLY_RESERVE:-600}" || exit 2
history() { (cd "$root" && "$python" -m analysis fleet-history "$@"); }
if [[ $first != 0 && $first != 1 ]]; then
  echo "nightly: MEMPATH_NIGHTLY_FIRST=$first; valid: 1 (no baseline yet) or 0" >&2
  exit 2
fi
mkdir -p -- "$night" "$(dirname -- "$db")" || exit 1

# The baseline, before ReFrame spends the night: without it nothing can be judged.
reference=$night/baseline
get_baseline() { history baseline-get --db "$db" --series "$series" -o "$reference" 2>"$night/baseline.err"; }
got=$(get_baseline)
have=$?
if ((have != 0)) && [[ $first == 0 && -d $dir/last-good/rfm/output ]]; then
  # The nightly before the database kept its baseline as the last-good folder alone.
  old=$(basename -- "$(readlink -f -- "$dir/last-good")")
  if history baseline-store --db "$db" --series "$series" --night "$old" "$dir/last-good/rfm/output" \
       >/dev/null 2>>"$night/baseline.err"; then
    echo "nightly: the baseline is night $old (from $dir/last-good), now kept in $db"
    got=$(get_baseline)
    have=$?
  fi
fi
if ((have == 0)); then
  base_night=$(sed -n 's/^analysis: baseline night=\([^ ]*\) .*/\1/p' <<<"$got")
  if [[ $first == 1 ]]; then
    echo "nightly: MEMPATH_NIGHTLY_FIRST=1 but $db holds the baseline of night $base_night for $series; valid: unset MEMPATH_NIGHTLY_FIRST" >&2
    exit 2
  fi
elif [[ $first == 1 ]]; then
  reference=$night/rfm/output
  base_night=
  echo "nightly: no baseline yet (MEMPATH_NIGHTLY_FIRST=1); tonight is the first reference"
else
  echo "nightly: no baseline to compare with: $(sed -n 's/^analysis: error: //p' "$night/baseline.err" | head -n1);" \
       "tonight would become the reference unchecked. The first night of a series: MEMPATH_NIGHTLY_FIRST=1;" \
       "else set MEMPATH_NIGHTLY_DB to the database that holds it" >&2
  exit 2
fi
keep="the baseline stays night ${base_night:-(none)}"

# ReFrame keeps its own run report and performance log (with each variable's reference) here.
job_run 0 "ReFrame" ${MEMPATH_REFRAME:-reframe} -C "$root/site_configs/${MEMPATH_SITE:-alps}.py" \
  -c "$root/reframe_checks" -r --tag acceptance --prefix "$night/rfm" \
  --report-file "$night/reframe-report.json" --perflogdir "$night/perflogs"
rc=$?
mapfile -t runs < <(find "$night/rfm/output" -name '*.h5' 2>/dev/null | sort)
if [ ${#runs[@]} -eq 0 ]; then
  echo "nightly: no HDF5 results under $night/rfm/output (ReFrame exit code $rc); $keep" >&2
  exit 1
fi
(cd "$root" && "$python" -m analysis report "${runs[@]}" -o "$night/report")
report=$?
(cd "$root" && "$python" -m analysis compare "$reference" "$night/rfm/output" \
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
  1) echo "nightly: regression against the baseline of night $base_night; $keep" >&2; exit 1 ;;
  2) echo "nightly: nothing comparable or unusable results (compare exit code 2); $keep" >&2; exit 1 ;;
  *) echo "nightly: compare failed (exit code $cmp); $keep" >&2; exit 1 ;;
esac
if [ "${compared:-0}" -lt 1 ]; then
  echo "nightly: compare compared no case; $keep" >&2
  exit 1
fi
if ! history baseline-store --db "$db" --series "$series" --night "$stamp" "$night/rfm/output" >/dev/null; then
  echo "nightly: $night passed but could not become the baseline (the line above says why); $keep" >&2
  exit 1
fi
ln -sfn -- "$night" "$dir/last-good"
echo "nightly: $night is the new baseline, in $db ($compared cases compared)"
