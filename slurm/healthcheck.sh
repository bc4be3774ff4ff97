#!/usr/bin/env bash
# A node's check of itself between jobs, inside Slurm's own loop (docs/healthcheck.md): one
# script for HealthCheckProgram, Prolog and Epilog. It measures each GPU's HBM read, its H2D
# and D2H copies, C2C on GH200 and each socket's read of its own memory (mempath bw and
# memcpy, a few seconds), reads the conditions mempath records (uncorrectable ECC, pending or
# failed row remaps, hardware clock holds at idle, a PCIe link below its maximum, NVLinks
# down), counts the GPUs against Slurm's gres, and judges every figure against this node's
# own reference (`python -m analysis healthcheck judge`). A failing check drains the node with
# one line naming the part, the figure, the reference and the cause; a passing one leaves the
# node alone.
#
#   slurm.conf:  HealthCheckProgram=/opt/mempath/slurm/healthcheck.sh
#                HealthCheckInterval=300
#                HealthCheckNodeState=IDLE
#   or           Prolog=/opt/mempath/slurm/healthcheck.sh   (and/or Epilog=)
#   by hand:     slurm/healthcheck.sh [--mode health|prolog|epilog] [--resume] [--no-drain]
#
# The mode comes from Slurm (SLURM_SCRIPT_CONTEXT prolog_slurmd / epilog_slurmd; else health)
# or --mode. In a prolog or epilog a failing check exits 1 (Slurm then drains the node and, in
# a prolog, requeues the job); a health check exits 0 after draining (slurmd ignores its exit).
# --resume (MEMPATH_HC_RESUME=1): a passing check resumes the node where mempath drained it
# (its reason starts "mempath:"), never a node drained by anyone else. --no-drain: judge and
# log only. Exit 0 ok (or not measured: a job runs here, another check holds the lock), 1 a
# failing check, 2 bad input.
#
# It never measures while a job runs on the node (a health check of a node with a job
# measures nothing; a prolog or epilog with another job on the node neither), writes only
# below its state folder, and ends every command at the check's own deadline: a hung GPU
# call drains the node for that reason and never holds slurmd.
#
# Environment (a site sets them in the script's environment or in MEMPATH_HC_CONFIG, a file
# of KEY=VALUE lines read first, default /etc/mempath/healthcheck.conf):
#   MEMPATH_HC_STATE      state folder (/var/lib/mempath/health): lock, health-log.csv (one
#                         row a check), last/ (the last check's files), last-drain/ (the
#                         files of the last check that drained)
#   MEMPATH_HC_REFERENCE  node references (`python -m analysis healthcheck reference --db
#                         HISTORY -o FILE`, after each night's fleet-history append); else
#                         the shipped references of the GPU kind; else presence and
#                         conditions only (the log says which)
#   MEMPATH_HC_KINDS      the GPU kinds' references (default the shipped
#                         analysis/fleet/data/health_kinds.json; `none`: not used)
#   MEMPATH_HC_LOCK       the lock a check holds (STATE/lock); nodes that share a machine's
#                         GPUs (a test cluster) name one lock, so that one measures at a time
#   MEMPATH_HC_DEADLINE   seconds the whole check may take (40: slurmd kills a health
#                         check at 60 s)
#   MEMPATH_HC_REPS       timed repetitions of each case (5)
#   MEMPATH_HC_SIZE       bytes per buffer (default mempath's: the plateau); MEMPATH_HC_IN_CACHE=1
#                         lets bw take buffers below 4x the caches (tests only: a cache's speed
#                         is no reference for memory)
#   MEMPATH_HC_HISTORY    a DuckDB file of its own: each check's rows appended (a node's
#                         day holds its last check; never the nightly fleet history, whose
#                         night of the node the append would replace)
#   MEMPATH, MEMPATH_HC_PYTHON   the binary (build/mempath of this repository, else
#                         `mempath`) and the Python with the analysis package (.venv/bin/python
#                         of this repository, else python3)
#   MEMPATH_HC_GRES       the node's GPU gres ("gpu:h100:4"; default: scontrol's Gres)
#   MEMPATH_HC_SCONTROL   scontrol (tests give their own)
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
config=${MEMPATH_HC_CONFIG:-/etc/mempath/healthcheck.conf}
if [[ -f $config ]]; then
  # KEY=VALUE lines of MEMPATH* keys only: the file sets the check's options, nothing else.
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    if [[ $line =~ ^(MEMPATH[A-Z_]*)=(.*)$ ]]; then
      [[ -n ${!BASH_REMATCH[1]:-} ]] || export "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
    else
      echo "healthcheck.sh: $config: '$line' is not a MEMPATH*=VALUE line; valid: MEMPATH_HC_STATE=/var/lib/mempath/health, ..." >&2
      exit 2
    fi
  done <"$config"
fi

mode= resume=${MEMPATH_HC_RESUME:-0} drain=1
while (($#)); do
  case $1 in
    --mode) mode=${2:-}; shift 2 || { echo "healthcheck.sh: --mode needs a value; valid: health, prolog, epilog" >&2; exit 2; } ;;
    --mode=*) mode=${1#--mode=}; shift ;;
    --resume) resume=1; shift ;;
    --no-drain) drain=0; shift ;;
    *) echo "healthcheck.sh: unknown argument '$1'; valid: --mode health|prolog|epilog, --resume, --no-drain" >&2; exit 2 ;;
  esac
done
if [[ -z $mode ]]; then
  case ${SLURM_SCRIPT_CONTEXT:-} in
    prolog_slurmd) mode=prolog ;;
    epilog_slurmd) mode=epilog ;;
    *) mode=health ;;
  esac
fi
[[ $mode =~ ^(health|prolog|epilog)$ ]] || { echo "healthcheck.sh: --mode $mode; valid: health, prolog, epilog" >&2; exit 2; }
deadline=${MEMPATH_HC_DEADLINE:-40}
reps=${MEMPATH_HC_REPS:-5}
[[ $deadline =~ ^[1-9][0-9]*$ ]] || { echo "healthcheck.sh: MEMPATH_HC_DEADLINE=$deadline; valid: whole seconds > 0 (40)" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]?$ ]] || { echo "healthcheck.sh: MEMPATH_HC_REPS=$reps; valid: 1 to 99 (5)" >&2; exit 2; }
state=${MEMPATH_HC_STATE:-/var/lib/mempath/health}
[[ $state == /* ]] || state=$PWD/$state
scontrol=${MEMPATH_HC_SCONTROL:-scontrol}
node=${SLURMD_NODENAME:-$(hostname -s)}
if [[ -z ${MEMPATH:-} ]]; then
  if [[ -x $here/build/mempath ]]; then MEMPATH=$here/build/mempath; else MEMPATH=mempath; fi
fi
if [[ -z ${MEMPATH_HC_PYTHON:-} ]]; then
  if [[ -x $here/.venv/bin/python ]]; then MEMPATH_HC_PYTHON=$here/.venv/bin/python; else MEMPATH_HC_PYTHON=python3; fi
fi
say() { echo "healthcheck.sh: $node: $*"; }

mkdir -p -- "$state/tmp" || { echo "healthcheck.sh: cannot create the state folder $state; valid: MEMPATH_HC_STATE, a folder root may write" >&2; exit 2; }
# Nothing of the check lands outside its state folder: temporary files, Python's caches.
export TMPDIR=$state/tmp PYTHONDONTWRITEBYTECODE=1 MPLCONFIGDIR=$state/tmp
lock=${MEMPATH_HC_LOCK:-$state/lock}
exec 9>"$lock" || { echo "healthcheck.sh: cannot open the lock $lock; valid: MEMPATH_HC_LOCK, a file root may write" >&2; exit 2; }
if ! flock -n 9; then
  say "another check runs (lock $lock held); nothing measured"
  exit 0
fi

# The node as Slurm has it: its state and reason (one line), and its gres.
node_line=$(timeout 10 "$scontrol" show node -o "$node" 2>/dev/null)
field() { sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p" <<<" $node_line"; }
node_state=$(field State)
node_reason=$(sed -n 's/.* Reason=\(.*\) \[[^]]*\]$/\1/p; s/.* Reason=\(.*\)$/\1/p' <<<" $node_line" | head -n1)
gres=${MEMPATH_HC_GRES-$(field Gres)}

# Never while a job runs here: the health check on an allocated node, a prolog or epilog
# beside another job (a shared node), measure nothing.
busy=
if [[ $mode == health ]]; then
  [[ $node_state =~ (ALLOC|MIX|COMPLETING) ]] && busy="node state $node_state"
elif command -v squeue >/dev/null; then
  others=$(timeout 10 squeue -h -w "$node" -t RUNNING,COMPLETING -o %A 2>/dev/null | grep -vx "${SLURM_JOB_ID:-none}" | head -n3 | paste -sd,)
  [[ -n $others ]] && busy="job(s) $others run here"
fi
if [[ -n $busy ]]; then
  say "$busy: nothing measured ($mode)"
  exit 0
fi

# gres "gpu:h100:4(S:0-1),gpu:a100:2" -> the GPUs' count and, where one type only, the type.
gres_gpus= gres_type=
if [[ -n $gres && $gres != "(null)" ]]; then
  while IFS=: read -r name type count; do
    [[ $name == gpu ]] || continue
    [[ -z $count ]] && { count=$type; type=; }
    count=${count%%(*}
    [[ $count =~ ^[0-9]+$ ]] || continue
    gres_gpus=$((${gres_gpus:-0} + count))
    [[ -z $gres_type || $gres_type == "$type" ]] && gres_type=$type || gres_type=mixed
  done < <(tr , '\n' <<<"$gres")
  [[ $gres_type == mixed ]] && gres_type=
fi

# shellcheck source=slurm/job_clock.sh
source "$here/slurm/job_clock.sh"
JOB_KILL_GRACE=2
start=$(date +%s)
JOB_DEADLINE=$((start + deadline - 3))  # 3 s kept for the verdict and the drain
run_dir=$state/run.$$
rm -rf -- "$run_dir" && mkdir -p -- "$run_dir" || exit 2
failure=
measure() {  # DIR NAME COMMAND ARGS...: into DIR/NAME.h5; a cut command is the verdict
  local dir=$1 name=$2 rc out
  shift 2
  out=$(job_run 0 "mempath $1" "$MEMPATH" "$@" --reps "$reps" --timeout "$((deadline - 3))" \
        --output "$dir/$name.h5" 2>&1 >/dev/null)
  rc=$?
  if ((rc == 124)); then
    failure="mempath: the health check passed its deadline of $deadline s in 'mempath $1' (a hung GPU call?)"
  elif ((rc == 2)) && grep -q "has no CUDA GPU" <<<"$out"; then
    rm -f -- "$dir/$name.h5"  # a node without GPUs: gres and NVML still say if it lost them
  elif ((rc == 2 || rc == 126 || rc == 127)); then
    # Bad options or no binary: the install's fault, not the node's. Said, never drained.
    say "'$MEMPATH $1' could not run (exit $rc: $(grep -m1 . <<<"$out")); set MEMPATH to the mempath binary; the node is left as it is" >&2
    rm -rf -- "$run_dir"
    exit 2
  elif ((rc != 0 && rc != 1)); then  # a crash (a signal): the node's
    failure="mempath: 'mempath $1' ended with exit $rc: $(grep -m1 . <<<"$out")"
  fi
  return 0
}
# Each processor's read of its own memories (a socket its DDR or LPDDR; a GPU its HBM; on
# GH200 also each end of C2C); each GPU's copies to and from its host memory at the plateau.
size=()
[[ -n ${MEMPATH_HC_SIZE:-} ]] && size=(--size "$MEMPATH_HC_SIZE")
in_cache=()
[[ ${MEMPATH_HC_IN_CACHE:-0} == 1 ]] && in_cache=(--in-cache)
measure_all() {
  mkdir -p -- "$1" || exit 2
  measure "$1" bw bw --all --op read --mem local --alloc numa,device --threads all --kernel grid "${size[@]}" "${in_cache[@]}"
  [[ -z $failure ]] && measure "$1" memcpy memcpy --gpu all --direction h2d,d2h --engine ce "${size[@]}"
  return 0
}
judge() {  # RUN_DIR...: sets verdict_line (HEALTH ok|drain|retest ...); exits 2 where none came
  local args=(-m analysis healthcheck judge "$@" --node "$node" --mode "$mode" --log "$state/health-log.csv"
              --elapsed "$(($(date +%s) - start))") said rc
  [[ -n $gres_gpus ]] && args+=(--gres-gpus "$gres_gpus")
  [[ -n $gres_type ]] && args+=(--gres-type "$gres_type")
  [[ -n ${MEMPATH_HC_REFERENCE:-} ]] && args+=(--reference "$MEMPATH_HC_REFERENCE")
  [[ -n ${MEMPATH_HC_KINDS:-} ]] && args+=(--kinds "$MEMPATH_HC_KINDS")
  said=$(cd "$here" && job_run 0 "the verdict" "$MEMPATH_HC_PYTHON" "${args[@]}" 2>&1)
  rc=$?
  grep -v '^HEALTH ' <<<"$said" | sed '/^$/d'
  verdict_line=$(grep -m1 '^HEALTH ' <<<"$said")
  if [[ ! $verdict_line =~ ^HEALTH\ (ok$|drain\ |retest\ ) ]]; then
    # The verdict could not be made: a broken install, not a broken node. Said, never drained.
    # The last line names it (a traceback's exception, argparse's error).
    say "no verdict from $MEMPATH_HC_PYTHON (exit $rc): $(grep . <<<"$said" | tail -n 1); the node is left as it is" >&2
    rm -rf -- "$run_dir"
    exit 2
  fi
}
measure_all "$run_dir"
verdict_line= judged=0
if [[ -z $failure ]]; then
  judge "$run_dir"
  if [[ $verdict_line == "HEALTH retest "* ]]; then
    # Only figures fell short: measured once more, and judged on each case's better figure.
    say "retest: ${verdict_line#HEALTH retest }"
    measure_all "$run_dir/retest"
    [[ -z $failure ]] && judge "$run_dir" "$run_dir/retest"
  fi
  [[ $verdict_line == "HEALTH drain "* ]] && failure=${verdict_line#HEALTH drain }
  judged=1
fi
if [[ -n $failure && $verdict_line != "HEALTH drain "* ]]; then  # the measurement itself failed: its row in the log all the same
  [[ -s $state/health-log.csv ]] || echo "time_utc,node,mode,verdict,elapsed_s,reference,figures,reason" >"$state/health-log.csv"
  printf '%s,%s,%s,drain,%s,,,"%s"\n' "$(date -u +%FT%TZ)" "$node" "$mode" "$(($(date +%s) - start))" \
    "${failure//\"/\"\"}" >>"$state/health-log.csv"
fi
if [[ -n ${MEMPATH_HC_HISTORY:-} && $judged == 1 ]]; then
  (cd "$here" && job_run 0 "the history" "$MEMPATH_HC_PYTHON" -m analysis fleet-history append \
     --db "$MEMPATH_HC_HISTORY" "$run_dir" >/dev/null) || say "rows not appended to $MEMPATH_HC_HISTORY" >&2
fi
keep=last
[[ -n $failure ]] && keep=last-drain
rm -rf -- "${state:?}/$keep" && mv -- "$run_dir" "$state/$keep"
elapsed=$(($(date +%s) - start))

if [[ -z $failure ]]; then
  say "ok in $elapsed s ($mode)"
  if ((resume)) && [[ $node_state == *DRAIN* && $node_reason == mempath:* ]]; then
    timeout 10 "$scontrol" update nodename="$node" state=resume && say "resumed (mempath had drained it: $node_reason)"
  fi
  exit 0
fi
say "FAIL in $elapsed s ($mode): $failure" >&2
if ((drain)); then
  if [[ $node_state == *DRAIN* && $node_reason != mempath:* ]]; then
    say "already drained by someone else ($node_reason): left as it is" >&2
  else
    timeout 10 "$scontrol" update nodename="$node" state=drain reason="$failure" ||
      say "scontrol could not drain the node" >&2
  fi
fi
[[ $mode == health ]] && exit 0
exit 1
