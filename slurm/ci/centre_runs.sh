#!/usr/bin/env bash
# Every batch script and check a centre runs, run through Slurm on the cluster of
# slurm/ci/cluster.sh, each as its documentation says (docs/reframe.md, "A centre's runs on
# the CI cluster"), with the faults a cluster has. Run as root beside the cluster (not in
# `cluster.sh exec`: the faults stop and restart it):
#
#   slurm/ci/cluster.sh start && slurm/ci/centre_runs.sh OUTDIR [RUN...]
#
# RUNs, in this order by default:
#   acceptance      reframe --tag acceptance --distribute=all (every node), then the report
#   nightly         slurm/nightly_acceptance.sbatch on two nights; the second compares
#   vet             sbatch -N ALL slurm/vet_fleet.sbatch, healthy (retest pass included)
#   paper           sbatch -N 2 slurm/paper.sbatch: its multi-node steps (Figs. 14 and 19)
#   characterise    sbatch slurm/characterise_node.sbatch
#   full            reframe --tag full on every node (only when named: it takes long)
#   fault-time      slurm/paper.sbatch on one node past its --time (2 min): cut, reported
#   fault-drain     acceptance --distribute=all with the last node drained mid-run
#   fault-slurmd    vet_fleet.sbatch with the last node's slurmd killed mid-run (its steps
#                   carry on: nothing may be lost, every node judged)
#   fault-node      vet_fleet.sbatch with the last node failing mid-run (slurmd and its
#                   processes killed): its finished files kept, the report names it
#   vet-fenced      the cluster restarted with its last node one GPU short
#                   (MEMPATH_SLURM_FENCE), then vet_fleet.sbatch, which must name it
#
# Each run gets OUTDIR/<run>/ (its job outputs, result files, reports) and a row in
# OUTDIR/runs.tsv: run, seconds, the scripts' exit codes, whether it went as it must
# (`ok`) and why not. Exit 0 when every run went as it must.
#
# Environment: MEMPATH_BIN (default build/mempath: built by site_configs/setup_env.sh
# beforehand), CENTRE_PYTHON (the Python with the analysis package and ReFrame; default
# python3), CENTRE_SMALL=1 (small sizes: a CPU-only CI machine; the device runs leave it
# unset), and the MEMPATH_SLURM_* variables the cluster was started with (the faults restart it).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$repo/slurm/ci/cluster.sh
[ $# -ge 1 ] || { echo "centre_runs.sh: usage: $0 OUTDIR [RUN...]" >&2; exit 2; }
out=$(realpath -m "$1")
shift
all=(acceptance nightly vet paper characterise fault-time fault-drain fault-slurmd fault-node vet-fenced)
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=("${all[@]}")
for r in "${runs[@]}"; do
  [[ " ${all[*]} full " == *" $r "* ]] ||
    { echo "centre_runs.sh: unknown run '$r'; valid: ${all[*]} full" >&2; exit 2; }
done
bin=${MEMPATH_BIN:-$repo/build/mempath}
py=${CENTRE_PYTHON:-python3}
[ -x "$bin" ] && [ -x "$(dirname "$bin")/mempath-mpi" ] ||
  { echo "centre_runs.sh: no $bin and mempath-mpi beside it (source site_configs/setup_env.sh first)" >&2; exit 2; }
"$cluster" status >/dev/null || { echo "centre_runs.sh: the cluster is not up ($cluster start)" >&2; exit 2; }
mkdir -p "$out"
table=$out/runs.tsv
[ -f "$table" ] || printf 'run\tseconds\texit\tverdict\tnote\n' > "$table"

# ReFrame as setup_env.sh finds it: MEMPATH_REFRAME, else `reframe` on PATH, else CENTRE_PYTHON's
# reframe module (a ReFrame installed with pip --target has no command on PATH).
if [ -z "${MEMPATH_REFRAME:-}" ]; then
  if command -v reframe >/dev/null; then
    MEMPATH_REFRAME=reframe
  elif "$py" -c 'import reframe.frontend.cli' 2>/dev/null; then
    MEMPATH_REFRAME="$py $repo/site_configs/run_reframe.py"
  else
    echo "centre_runs.sh: no ReFrame: neither \`reframe\` on PATH nor $py's reframe module (set MEMPATH_REFRAME)" >&2
    exit 2
  fi
fi
read -r -a rfm <<< "$MEMPATH_REFRAME"
on() { "$cluster" exec "$@"; }
nodes() { on sinfo -h -N -o %N | sort -u; }
# The cluster as it was found: the faults restart it with as many nodes.
node_list=$(nodes)
node_count=$(wc -l <<< "$node_list")
victim=$(tail -n1 <<< "$node_list")
small_vet=() small_rfm=()
if [ "${CENTRE_SMALL:-0}" = 1 ]; then
  # Long enough (seconds) for the faults to land mid-run.
  small_vet=(VET_SIZE=128MiB VET_REPS=5 VET_CHASE_SIZE=64MiB VET_CHASE_REPS=2 VET_ROUND_TRIPS=2000)
  small_rfm=(-S MempathBandwidth.size=8MiB -S MempathBandwidth.in_cache=true -S MempathBandwidth.reps=2
             -S MempathBandwidth.quick=true -S MempathChase.size=1MiB -S MempathChase.reps=2
             -S MempathStream.size=8MiB -S MempathStream.reps=2 -S MempathStream.extra_options=--in-cache
             -S MempathMpiBandwidth.max_size=64KiB)
fi

# row RUN SECONDS EXITS VERDICT NOTE
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$table"; echo "centre_runs.sh: $1: $4 in $2 s (exit $3)${5:+: $5}"; }
# rfm_run DIR ARGS...: ReFrame with the CI site configuration and the built binary (a
# centre's installed one: the build fixture only points at it).
rfm_run() {
  local dir=$1
  shift
  on env "${rfm[@]}" -C "$repo/site_configs/ci.py" -c "$repo/reframe_checks" -r \
    --exec-policy=serial -S "MempathBuild.mempath_bin=$bin" "${small_rfm[@]}" \
    --prefix "$dir/rfm" --report-file "$dir/reframe-report.json" "$@" > "$dir/reframe.log" 2>&1
}
# report DIR: the report of DIR/rfm's result files, as run_suite.sh writes it.
report() {
  local dir=$1 files
  mapfile -t files < <(find "$dir/rfm/output" -name '*.h5' 2>/dev/null | sort)
  [ ${#files[@]} -gt 0 ] || { echo "no result files under $dir/rfm/output" > "$dir/report.log"; return 1; }
  (cd "$repo" && "$py" -m analysis report "${files[@]}" -o "$dir/report") > "$dir/report.log" 2>&1
}
# ran DIR: "N/M test cases passed" from ReFrame's report.
ran() {
  "$py" - "$1/reframe-report.json" <<'PY' 2>/dev/null || echo "no ReFrame report"
import json, sys
cases = [tc for run in json.load(open(sys.argv[1]))["runs"][:1] for tc in run["testcases"]]
ok = sum(tc["result"] == "pass" for tc in cases)
bad = sorted({f'{tc["name"]} ({tc["fail_reason"] or tc["result"]})'[:160] for tc in cases if tc["result"] != "pass"})
print(f"{ok}/{len(cases)} test cases passed" + ("; not: " + "; ".join(bad) if bad else ""))
PY
}
# sbatch_wait DIR OPTION... SCRIPT [ARG|NAME=VALUE...]: sbatch --wait from the repository
# with the NAME=VALUE variables in the job's environment (as a user exports them) and the
# other ARGs for the script; the job's output in DIR.
sbatch_wait() {
  local dir=$1 opts=() vars=() args=() a
  shift
  while [ $# -gt 0 ] && [[ $1 == -* ]]; do opts+=("$1"); shift; done
  local script=$1
  shift
  for a in "$@"; do
    if [[ $a =~ ^[A-Z_][A-Z0-9_]*= ]]; then vars+=("$a"); else args+=("$a"); fi
  done
  on env "${vars[@]}" sbatch --wait --chdir="$repo" --output="$dir/job-%j.out" \
    "${opts[@]}" "$script" "${args[@]}" > /dev/null
}
# verdicts DIR: "node verdict" pairs of a fleet report.
verdicts() {
  "$py" - "$1/nodes.csv" <<'PY' 2>/dev/null || echo "no nodes.csv"
import csv, sys
print(" ".join(f"{r['node']}={r['verdict']}" for r in csv.DictReader(open(sys.argv[1]))))
PY
}

run_acceptance() {
  local o=$out/acceptance rc rep
  mkdir -p "$o"
  rfm_run "$o" --tag acceptance --distribute=all
  rc=$?
  report "$o"
  rep=$?
  local verdict=ok
  ((rc == 0 && rep == 0)) || verdict=failed
  row acceptance "$((SECONDS - t0))" "reframe=$rc report=$rep" $verdict "$(ran "$o") on $(tr '\n' ' ' <<< "$node_list")"
}

run_full() {
  local o=$out/full rc rep
  mkdir -p "$o"
  rfm_run "$o" --tag full --distribute=all -x MempathBuild
  rc=$?
  report "$o"
  rep=$?
  local verdict=ok
  ((rc == 0 && rep == 0)) || verdict=failed
  row full "$((SECONDS - t0))" "reframe=$rc report=$rep" $verdict "$(ran "$o")"
}

# The nightly as its header says, with its database and nights in OUTDIR; the second
# night is compared with the first.
run_nightly() {
  local o=$out/nightly rc1 rc2 env
  mkdir -p "$o"
  env=(MEMPATH_SITE=ci "MEMPATH_NIGHTLY_DIR=$o/nights" "MEMPATH_NIGHTLY_DB=$o/nightly.duckdb"
       "MEMPATH_PYTHON=$py" "MEMPATH_NIGHTLY_RESERVE=120"
       "MEMPATH_REFRAME=${rfm[*]} --exec-policy=serial -S MempathBuild.mempath_bin=$bin ${small_rfm[*]}")
  on env "${env[@]}" MEMPATH_NIGHTLY_FIRST=1 \
    sbatch --wait --chdir="$repo" --output="$o/night1-%j.out" --time=30 "$repo/slurm/nightly_acceptance.sbatch" >/dev/null
  rc1=$?
  on env "${env[@]}" \
    sbatch --wait --chdir="$repo" --output="$o/night2-%j.out" --time=30 "$repo/slurm/nightly_acceptance.sbatch" >/dev/null
  rc2=$?
  local verdict=ok
  ((rc1 == 0 && rc2 == 0)) || verdict=failed
  row nightly "$((SECONDS - t0))" "night1=$rc1 night2=$rc2" $verdict \
    "$(grep -h '^nightly:' "$o"/night2-*.out 2>/dev/null | tail -n1)"
}

run_vet() {
  local name=${1:-vet} o rc n=$node_count
  o=$out/$name
  mkdir -p "$o"
  sbatch_wait "$o" -N "$n" --time=20 "$repo/slurm/vet_fleet.sbatch" "$o/vetting" "${small_vet[@]}" < /dev/null
  rc=$?
  echo "$rc"
  verdicts "$o/vetting/report" > "$o/verdicts.txt"
}

run_vet_healthy() {
  local rc v verdict=ok
  rc=$(run_vet vet | tail -n1)
  v=$(cat "$out/vet/verdicts.txt")
  [[ $rc == 0 && $v != *degraded* && $v != *failed* && $v != *missing* ]] || verdict=failed
  row vet "$((SECONDS - t0))" "sbatch=$rc" $verdict "$v"
}

# The MPI steps of the paper set on two nodes (Fig. 19 takes its one node count from the
# one-node NCCL step of Fig. 18, its two from the nodes' step), through a MEMPATH_MPI_BIN that cuts
# what TCP between network namespaces makes long (functional runs: the nodes share the
# machine): NCCL's collectives (Fig. 19's 4 GiB all-reduce takes seconds each) to 3 timed
# after 1 warm-up, the MPI sweep (Fig. 14) to 64 MiB (256 KiB with CENTRE_SMALL).
run_paper() {
  local o=$out/paper rc mpi=$out/paper/mempath-mpi real max=64MiB
  mkdir -p "$o"
  real=$(dirname "$bin")/mempath-mpi
  [ "${CENTRE_SMALL:-0}" = 1 ] && max=256KiB
  printf '#!/bin/sh\ncase "$1" in\n  nccl) exec "%s" "$@" --iters 3 --warmup 1 ;;\n  bw) exec "%s" "$@" --max-size %s ;;\nesac\nexec "%s" "$@"\n' \
    "$real" "$real" "$max" "$real" > "$mpi"
  chmod +x "$mpi"
  sbatch_wait "$o" -N 2 --time=20 "$repo/slurm/paper.sbatch" MEMPATH_OUT="$o/set" \
    MEMPATH_PAPER_ONLY=MempathPaperNccl,MempathPaperMpiBandwidth,MempathPaperNcclNodes SLURM_MPI_TYPE=pmix \
    MEMPATH_BIN="$bin" MEMPATH_MPI_BIN="$mpi" MEMPATH_PAPER_RESERVE=120
  rc=$?
  local verdict=ok drawn="" fig
  for fig in 14 19; do
    if grep -A3 "^## Fig. $fig:" "$o/set/paper/paper.md" 2>/dev/null | grep -q "Not drawn"; then
      drawn+="Fig. $fig not drawn; "
      verdict=failed
    elif grep -q "^## Fig. $fig:" "$o/set/paper/paper.md" 2>/dev/null; then
      drawn+="Fig. $fig drawn; "
    else
      drawn+="Fig. $fig missing; "
      verdict=failed
    fi
  done
  ((rc == 0)) || verdict=failed
  row paper "$((SECONDS - t0))" "sbatch=$rc" $verdict "${drawn% }"
}

run_characterise() {
  local o=$out/characterise rc verdict=ok
  mkdir -p "$o"
  sbatch_wait "$o" -N 1 --time=20 "$repo/slurm/characterise_node.sbatch" MEMPATH_OUT="$o/node" \
    MEMPATH_BIN="$bin" MEMPATH_REPORT=1 MEMPATH_PYTHON="$py"
  rc=$?
  [[ $rc == 0 && -f $o/node/report/index.html ]] || verdict=failed
  row characterise "$((SECONDS - t0))" "sbatch=$rc" $verdict "$(grep -c '^MEMPATH bw' "$o/node/bw.txt" 2>/dev/null) bw cases"
}

# A job past its time limit: the single-node paper set in a 2-minute job keeping 50 s for the
# figures. It must be cut, keep what finished and draw the figures of it.
run_fault_time() {
  local o=$out/fault-time rc verdict=ok
  mkdir -p "$o"
  local limit=2 reserve=50
  # CENTRE_SMALL: a CPU machine's three steps (about 9 s) get 5 s, so that one is always cut
  # or never started; the figures keep the rest of the 2 minutes.
  [ "${CENTRE_SMALL:-0}" = 1 ] && reserve=115
  sbatch_wait "$o" -N 1 --time=$limit "$repo/slurm/paper.sbatch" MEMPATH_OUT="$o/set" MEMPATH_BIN="$bin" \
    MEMPATH_PAPER_RESERVE=$reserve
  rc=$?
  local cut kept
  cut=$(cat "$o"/job-*.out 2>/dev/null | grep -c "^mempath: Mempath[A-Za-z0-9]* \(cut after\|not started\)")
  kept=$(find "$o/set" -maxdepth 1 -name '*.h5' | wc -l)
  [[ $rc != 0 && -f $o/set/paper/paper.md && $kept -gt 0 && $cut -gt 0 ]] || verdict=failed
  row fault-time "$((SECONDS - t0))" "sbatch=$rc" $verdict "$kept result files kept, figures drawn: $([ -f "$o/set/paper/paper.md" ] && echo yes || echo no); steps cut or not started (the job log names each): $cut"
}

# A node drained while ReFrame runs the acceptance on every node: its checks that had not
# started are cancelled (ReFrame: job blocked) and named; the report covers what ran.
run_fault_drain() {
  local o=$out/fault-drain rc rep pid verdict=ok
  mkdir -p "$o"
  rfm_run "$o" --tag acceptance --distribute=all -n 'MempathBandwidth|MempathChase|MempathStream' &
  pid=$!
  # Drain once the first job has finished (its result file is there), mid-run.
  local i
  for i in $(seq 600); do
    find "$o/rfm/output" -name '*.h5' 2>/dev/null | grep -q . && break
    kill -0 $pid 2>/dev/null || break
    sleep 1
  done
  on scontrol update nodename="$victim" state=drain reason="centre_runs: drained mid-run"
  wait $pid
  rc=$?
  on scontrol update nodename="$victim" state=resume
  report "$o"
  rep=$?
  local why
  why=$(ran "$o")
  [[ $rc != 0 && $rep == 0 && $why == *"$victim"* ]] || verdict=failed
  row fault-drain "$((SECONDS - t0))" "reframe=$rc report=$rep" $verdict "drained $victim: $why"
}

# A fault during vet_fleet.sbatch's first pass on the last node, once its first result file
# is there: `slurmd` (its slurmd killed: the job steps it started carry on, so nothing
# measured may be missing and every node must be judged) or `node` (the node fails: slurmd
# and every process of it killed; its finished files must stay and the report must name it).
# Then the cluster is restarted for what follows.
run_fault_kill() {
  local kind=$1 o=$out/fault-$1 n=$node_count pid rc verdict=ok
  mkdir -p "$o"
  sbatch_wait "$o" -N "$n" --time=20 "$repo/slurm/vet_fleet.sbatch" "$o/vetting" "${small_vet[@]}" < /dev/null &
  pid=$!
  local i kept
  for i in $(seq 600); do
    find "$o/vetting/$victim" -name '*.h5' 2>/dev/null | grep -q . && break
    kill -0 $pid 2>/dev/null || break
    sleep 1
  done
  if [ "$kind" = node ]; then "$cluster" kill "$victim" --all; else "$cluster" kill "$victim"; fi > "$o/kill.log" 2>&1
  wait $pid
  rc=$?
  local v
  v=$(verdicts "$o/vetting/report")
  echo "$v" > "$o/verdicts.txt"
  kept=$(find "$o/vetting/$victim" -name '*.h5' | wc -l)
  if [ "$kind" = node ]; then
    [[ -f $o/vetting/report/nodes.csv && $v == *"$victim="* && $v != *"$victim=healthy"* && $kept -gt 0 ]] || verdict=failed
  else
    [[ -f $o/vetting/report/nodes.csv && $v != *failed* && $v != *missing* ]] || verdict=failed
  fi
  row "fault-$kind" "$((SECONDS - t0))" "sbatch=$rc" $verdict "$(head -n1 "$o/kill.log") mid-run: $v; $kept files of $victim kept"
  # The node back for what follows.
  MEMPATH_SLURM_NODES=$n "$cluster" start > "$o/restart.log" 2>&1 || echo "centre_runs.sh: the cluster did not restart" >&2
}

run_vet_fenced() {
  local n=$node_count rc v verdict=ok
  MEMPATH_SLURM_NODES=$n MEMPATH_SLURM_FENCE=$victim "$cluster" start > "$out/vet-fenced.start.log" 2>&1 ||
    { row vet-fenced 0 "start=1" failed "the fenced cluster did not start"; return; }
  rc=$(run_vet vet-fenced | tail -n1)
  v=$(cat "$out/vet-fenced/verdicts.txt")
  # The fenced node must be named (not healthy); the others judged.
  [[ $v == *"$victim="* && $v != *"$victim=healthy"* ]] || verdict=failed
  row vet-fenced "$((SECONDS - t0))" "sbatch=$rc" $verdict "$victim one GPU short: $v"
  MEMPATH_SLURM_NODES=$n "$cluster" start > "$out/vet-fenced.restart.log" 2>&1 || true
}

failed=0
for r in "${runs[@]}"; do
  t0=$SECONDS
  echo "centre_runs.sh: $r ..."
  case $r in
    acceptance) run_acceptance ;;
    full) run_full ;;
    nightly) run_nightly ;;
    vet) run_vet_healthy ;;
    paper) run_paper ;;
    characterise) run_characterise ;;
    fault-time) run_fault_time ;;
    fault-drain) run_fault_drain ;;
    fault-slurmd) run_fault_kill slurmd ;;
    fault-node) run_fault_kill node ;;
    vet-fenced) run_vet_fenced ;;
  esac
  tail -n1 "$table" | grep -q $'\tok\t' || failed=$((failed + 1))
done
column -t -s $'\t' "$table" 2>/dev/null || cat "$table"
[ "$failed" = 0 ]
