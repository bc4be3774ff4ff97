#!/usr/bin/env bash
# The short vetting preset on this node (docs/vetting.md): a read of every processor x
# memory path (HBM, LPDDR, C2C, PCIe, peer, socket to socket), copies from each
# processor's own memory to every memory, H2D/D2H copies, a pointer chase of every socket
# x host memory and of every GPU x GPU memory and the first host memory, one ping-pong
# between the first CPU node and the first GPU. Results go to OUTDIR/<host>/{bw,memcpy,
# chase,chase_gpu,pingpong}.h5 and OUTDIR/<host>/copy/<pu>.h5 (and, written before
# measuring, OUTDIR/<host>/plan.json: the planned cases per file), so many nodes can share one
# OUTDIR (vet_fleet.sbatch, ReFrame's --distribute) and `python -m analysis fleet OUTDIR`
# reads them all (it merges the files of one host).
#
#   slurm/vet_node.sh [OUTDIR]                          # default OUTDIR: ./vetting
#   srun -N4 --ntasks-per-node=1 --cpu-bind=none slurm/vet_node.sh $SCRATCH/vet-$(date +%F)
#   VET_PLAN=tests/fixtures/gh200_quad slurm/vet_node.sh   # count the cases, run nothing
#   VET_RETEST=REPORT/retest.json slurm/vet_node.sh OUTDIR  # re-run this node's flagged cases
#
# Every command runs even when one before failed; the script then exits with the highest
# exit code (1: a case failed, 2: bad input) and names each failed command on stderr.
# GPU commands are left out on a node without a GPU. An existing OUTDIR/<host>/X.h5 is
# refused by mempath (exit 2): vet into a fresh folder, or set VET_OVERWRITE=1.
#
# Environment (the defaults are the preset; smaller values are for tests only):
#   MEMPATH          the binary (default: build/mempath of this repository, else `mempath`)
#   VET_SIZE         bytes per buffer of bw and memcpy (default: mempath's, bw 1 GiB raised to 4x the caches); VET_IN_CACHE=1 allows sizes
#                    below 4x the caches (bw --in-cache)
#   VET_CHASE_SIZE   chase buffer (1GiB)
#   VET_REPS         timed repetitions of bw and memcpy (15: the median's standard error
#                    under 1 % at the CPU reads' within-run spread, 2.7 % on the H100 runs of
#                    analysis/fleet/data/noise_h100.json; the ReFrame check passes its own, 5)
#   VET_CHASE_REPS   timed repetitions of each CPU chase (7 x 2^21 loads: about 2.5 s at
#                    160 ns, the paper's chase length; one repetition scattered 9 % run to run)
#   VET_CHASE_GPU_REPS  of each GPU chase (3: a GPU chase repeats within 0.3 %)
#   VET_ROUND_TRIPS  ping-pong round trips (10000)
#   VET_TIMEOUT      per-case time limit in seconds (300; mempath --timeout)
#   VET_TIME_LIMIT   seconds the whole script may take (default: none; the ReFrame check
#                    passes its time_limit less a reserve). With it, under Slurm (the job's
#                    end) or with MEMPATH_DEADLINE (epoch seconds, vet_fleet.sbatch's), each
#                    command gets only the time left before that deadline less VET_RESERVE
#                    seconds (60) and is ended there (slurm/job_clock.sh): a hung GPU costs
#                    its cases, never the files of the others or the fleet report
#   VET_PLAN         a topology snapshot (`mempath topo --save DIR`): print each file's
#                    planned cases ("vet_node.sh: plan FILE: N cases") and run nothing
#   VET_RETEST       the retest.json of `analysis fleet` (docs/vetting.md): run only this
#                    host's listed cases, each with the preset's options and the entry's
#                    filter options, into OUTDIR/retest/<host>/round<R>/<file> (a second
#                    entry of one file: <file stem>-2.h5, ...), VET_RETEST_ROUNDS times
#                    (3: the fleet analysis takes the rounds' median); nothing for a host not listed. Its
#                    JSON is read with VET_PYTHON (default python3; the standard library)
#   VET_PYTHON       also writes OUTDIR/<host>/fleet-summary.json at the end, where it can
#                    import this repository's analysis package (h5py, numpy, pandas)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${MEMPATH:-} ]]; then
  if [[ -x $here/build/mempath ]]; then MEMPATH=$here/build/mempath; else MEMPATH=mempath; fi
fi
outdir=${1:-vetting}
# A folder named -x would be read as an option by mkdir, mempath and every tool after.
[[ $outdir == -* ]] && outdir=./$outdir
# No --size by default: mempath's own (bw: 1 GiB raised to 4x the caches on each path; on
# the H100 loan's host, L3 300 MiB, 1GiB was refused as cache-resident).
size_opt=()
[[ -n ${VET_SIZE:-} ]] && size_opt=(--size "$VET_SIZE")
chase_size=${VET_CHASE_SIZE:-1GiB}
reps=${VET_REPS:-15}
chase_reps=${VET_CHASE_REPS:-7}
chase_gpu_reps=${VET_CHASE_GPU_REPS:-3}
round_trips=${VET_ROUND_TRIPS:-10000}
timeout=${VET_TIMEOUT:-300}
plan=${VET_PLAN:-}
retest=${VET_RETEST:-}
retest_rounds=${VET_RETEST_ROUNDS:-3}
host=$(hostname -s)
dir=$outdir/$host
[[ -n $retest ]] && dir=$outdir/retest/$host

if [[ $# -gt 1 ]]; then
  echo "vet_node.sh: one argument at most (the output folder), got $#: $*" >&2
  exit 2
fi
if [[ ! $retest_rounds =~ ^[1-9][0-9]?$ ]]; then
  echo "vet_node.sh: VET_RETEST_ROUNDS=$retest_rounds; valid: a whole number of rounds, 1 to 99" >&2
  exit 2
fi
# shellcheck source=slurm/job_clock.sh
source "$here/slurm/job_clock.sh"
job_clock_start "${VET_RESERVE:-60}" "${VET_TIME_LIMIT:-}" || exit 2
[[ $timeout =~ ^[0-9]+$ ]] || { echo "vet_node.sh: VET_TIMEOUT=$timeout; valid: whole seconds (0: none)" >&2; exit 2; }
from=()
[[ -n $plan ]] && from=(--from "$plan")
# A hung GPU can hang the driver's first call too: topo runs under the clock like the rest.
if ! topo=$(job_run "$timeout" "mempath topo" "$MEMPATH" topo "${from[@]}" 2>&1); then
  echo "vet_node.sh: '$MEMPATH topo ${from[*]}' failed on $host (set MEMPATH to the mempath binary, VET_PLAN to a snapshot folder): ${topo%%$'\n'*}" >&2
  exit 2
fi
[[ -n $plan || -n $retest ]] || mkdir -p -- "$dir/copy" || exit 1
# Before measuring, $dir/plan.json: the cases this node's own topology plans per file (the
# VET_PLAN counting, against a snapshot of the live node), so that `analysis fleet` can
# tell a file or case that never came (docs/vetting.md). A plan that cannot be made is one
# line on stderr; the measurement runs all the same.
if [[ -z $plan && -z $retest ]]; then
  why=
  if ! snapshot=$(mktemp -d); then
    why="no temporary folder for the snapshot"
  elif ! job_run "$timeout" "mempath topo --save" "$MEMPATH" topo --save "$snapshot/topo" >/dev/null 2>"$snapshot/err"; then
    why="'$MEMPATH topo --save' failed: $(head -n1 "$snapshot/err")"
  elif ! counted=$(VET_RETEST='' VET_PLAN=$snapshot/topo "${BASH_SOURCE[0]}" "$outdir" 2>"$snapshot/err"); then
    why=$(head -n1 "$snapshot/err")
  elif ! awk -v host="$host" 'BEGIN { printf "{\"schema\": 1, \"host\": \"%s\", \"files\": {", host }
      /^vet_node\.sh: plan .*: [0-9]+ cases$/ { sub(/:$/, "", $3); printf "%s\"%s\": %d", sep, $3, $4; sep = ", " }
      END { print "}}" }' <<<"$counted" >"$dir/plan.json"; then
    why="cannot write $dir/plan.json"
  fi
  [[ -n $why ]] && echo "vet_node.sh: $host: no plan.json ($why); measuring anyway" >&2
  [[ -n ${snapshot:-} ]] && rm -rf -- "$snapshot"
fi

common=()
[[ ${VET_OVERWRITE:-0} == 1 ]] && common+=(--overwrite)
in_cache=()
[[ ${VET_IN_CACHE:-0} == 1 ]] && in_cache=(--in-cache)
timed=(--reps "$reps")
[[ -n $plan ]] && timed=()   # `mempath list` (bw's plan) has no --reps

# The node's parts, from `mempath topo`'s processor lines "  cpuN  cpu  numaM, ..." and
# "  gpuN  gpu  ..." and memory lines "  numaN  host ...". The all-sockets processor `cpus`
# is left out: its reads are spread over every socket, so no one part is measured.
sockets=$(awk '$2 == "cpu" && $1 ~ /^cpu[0-9]+$/ {print $1}' <<<"$topo")
gpus=$(awk '$2 == "gpu" && $1 ~ /^gpu[0-9]+$/ {print $1}' <<<"$topo")
host_mems=$(awk '$2 == "host" && $1 ~ /^numa[0-9]+$/ {print $1}' <<<"$topo")
list() { paste -sd, <<<"$1"; }
first_mem=${host_mems%%$'\n'*}

worst=0
cut=()  # the commands the deadline ended or left out
# run NAME COMMAND ARGS...: mempath COMMAND ARGS into $dir/NAME.h5, remembering the worst
# exit code; with VET_PLAN the command's plan against the snapshot: its PLAN lines counted.
run() {
  local name=$1 command=$2
  shift 2
  [[ $command == bw && -z $retest ]] && set -- --all "$@"
  if [[ -n $plan ]]; then
    local planned
    if ! planned=$("$MEMPATH" "$command" "$@" "${from[@]}" 2>&1); then
      echo "vet_node.sh: plan of $name failed: ${planned%%$'\n'*}" >&2
      worst=2
      return 0
    fi
    echo "vet_node.sh: plan $name.h5: $(grep -c '^PLAN .* status=planned' <<<"$planned") cases"
    return 0
  fi
  echo "vet_node.sh: $host: mempath $command $*"
  # The per-case limit, and never past the deadline: a case started late is ended by its
  # own watchdog (the file says `aborted`), the command by job_run in any case.
  local left case_limit=$timeout
  left=$(job_left)
  [[ -n $left ]] && ((left > 0)) && { ((case_limit == 0)) || ((left < case_limit)); } && case_limit=$left
  job_run 0 "mempath $name" "$MEMPATH" "$command" "$@" "${common[@]}" --timeout "$case_limit" \
    --output "$dir/$name.h5"
  local rc=$?
  ((rc == 124)) && { cut+=("$name"); rc=1; }  # its cases (or the rest of them) did not run
  if ((rc != 0)); then
    echo "vet_node.sh: $host: mempath $name exited with $rc" >&2
    ((rc > worst)) && worst=$rc
  fi
  return 0
}

# How the preset measures each command, in both passes; the first pass adds what it
# covers, a retest one case's filter options (its --size: the size the first pass measured).
bw_measure=("${timed[@]}" "${in_cache[@]}")
memcpy_measure=("${timed[@]}")
# A retest chase takes the CPU chases' repetitions whichever processor chases: never fewer.
chase_measure=(--reps "$chase_reps")
pingpong_measure=(--round-trips "$round_trips")

start=$SECONDS
if [[ -n $retest ]]; then
  # One line a case of this host: "FAMILY<TAB>OUTPUT NAME<TAB>ARG<TAB>ARG..."; the analysis
  # runs as a module from the repository root (docs/design.md), so the file is named from here.
  retest_file=$retest
  [[ $retest_file == /* ]] || retest_file=$PWD/$retest_file
  if ! cases=$(cd "$here" && "${VET_PYTHON:-python3}" -m analysis.fleet.retest_list cases "$retest_file" "$host"); then
    echo "vet_node.sh: VET_RETEST=$retest cannot be read on $host (the line above); valid: the retest.json of analysis fleet" >&2
    exit 2
  fi
  if [[ -z $cases ]]; then
    echo "vet_node.sh: $host: not in $retest, nothing to retest"
    exit 0
  fi
  # Each round re-runs every listed case into round<R>/: the fleet analysis judges the
  # median of the rounds, so one unlucky repetition of the noise neither condemns a node
  # nor clears it (docs/vetting.md).
  for ((round = 1; round <= retest_rounds; round++)); do
    while IFS=$'\t' read -r -a entry; do
      name=round$round/${entry[1]}
      [[ -n $plan ]] || mkdir -p -- "$(dirname -- "$dir/$name")" || exit 1
      measure="${entry[0]}_measure[@]"
      run "$name" "${entry[0]}" "${!measure}" "${entry[@]:2}"
    done <<<"$cases"
  done
  ((${#cut[@]})) && echo "vet_node.sh: $host: the deadline ended or left out ${cut[*]}" >&2
  [[ -n $plan ]] || echo "vet_node.sh: $host: retest done in $((SECONDS - start)) s, exit $worst, results in $dir"
  exit "$worst"
fi
bw=(--threads all --kernel grid "${bw_measure[@]}" "${size_opt[@]}")
# Reads of every processor x memory: numa (host and HBM NUMA nodes), device (GPU memory)
# and pinned (the one way a GPU without ATS reads host memory, over PCIe).
run bw bw "${bw[@]}" --op read --pu "$(list "$sockets"$'\n'"$gpus")" --alloc numa,device,pinned
# Copies from each processor's own memory to every memory, not every source x destination
# (that was 896 of 1,200 cases on a quad GH200): every path is still written once.
while read -r pu own; do
  [[ -n $pu ]] && run "copy/$pu" bw "${bw[@]}" --op copy --pu "$pu" --mem "${own%,}" --alloc numa
done < <(awk '$2 == "cpu" && $1 ~ /^cpu[0-9]+$/ {print $1, $3}' <<<"$topo")
for gpu in $gpus; do
  run "copy/$gpu" bw "${bw[@]}" --op copy --pu "$gpu" --mem "$gpu" --alloc device
done
if [[ -n $gpus ]]; then
  run memcpy memcpy --gpu all --direction h2d,d2h --engine ce "${memcpy_measure[@]}" "${size_opt[@]}"
  pingpong_pus=cpu0,gpu0
else
  echo "vet_node.sh: $host: no GPU, memcpy left out (and chase_gpu)"
  pingpong_pus=cpu0
fi
chase=(--all --size "$chase_size")
run chase chase "${chase[@]}" --reps "$chase_reps" --pu "$(list "$sockets")" --mem "$(list "$host_mems")"
[[ -n $gpus ]] && run chase_gpu chase "${chase[@]}" --reps "$chase_gpu_reps" --pu "$(list "$gpus")" \
  --mem "$(list "$gpus"$'\n'"$first_mem")"
run pingpong pingpong --pu "$pingpong_pus" --mem numa0 "${pingpong_measure[@]}"
if [[ -n $plan ]]; then
  exit "$worst"
fi
((${#cut[@]})) && echo "vet_node.sh: $host: the deadline ended or left out ${cut[*]}" >&2
# The node's fleet rows in one file beside its results (`analysis fleet-summary`): the
# fleet analysis then reads one file a node, not 13 (docs/fleet.md). Where the analysis
# package cannot run here, the fleet analysis reads the files: only time is lost.
absdir=$(cd -- "$dir" && pwd)
if said=$(cd "$here" && job_run 120 "fleet-summary" "${VET_PYTHON:-python3}" -m analysis fleet-summary "$absdir" 2>&1); then
  echo "vet_node.sh: $host: fleet summary in $dir/fleet-summary.json"
else
  echo "vet_node.sh: $host: no fleet summary (${said##*$'\n'}); the fleet analysis reads the files"
fi
echo "vet_node.sh: $host: done in $((SECONDS - start)) s, exit $worst, results in $dir"
exit "$worst"
