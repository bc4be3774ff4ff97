#!/usr/bin/env bash
# The short vetting preset on this node (docs/vetting.md): every memory path's read and
# copy bandwidth (HBM, LPDDR, C2C, PCIe, peer), H2D/D2H copies, one pointer chase over
# every processor x memory, one ping-pong between the first CPU node and the first GPU.
# Results go to OUTDIR/<host>/{bw,memcpy,chase,pingpong}.h5, so many nodes can share one
# OUTDIR (vet_fleet.sbatch, ReFrame's --distribute) and `python -m analysis fleet OUTDIR`
# reads them all.
#
#   slurm/vet_node.sh [OUTDIR]                          # default OUTDIR: ./vetting
#   srun -N4 --ntasks-per-node=1 --cpu-bind=none slurm/vet_node.sh $SCRATCH/vet-$(date +%F)
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
#   VET_REPS         timed repetitions of bw and memcpy (5)
#   VET_ROUND_TRIPS  ping-pong round trips (10000)
#   VET_TIMEOUT      per-case time limit in seconds (300; mempath --timeout)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${MEMPATH:-} ]]; then
  if [[ -x $here/build/mempath ]]; then MEMPATH=$here/build/mempath; else MEMPATH=mempath; fi
fi
outdir=${1:-vetting}
# No --size by default: mempath's own (bw: 1 GiB raised to 4x the caches on each path; on
# the H100 loan's host, L3 300 MiB, 1GiB was refused as cache-resident).
size_opt=()
[[ -n ${VET_SIZE:-} ]] && size_opt=(--size "$VET_SIZE")
chase_size=${VET_CHASE_SIZE:-1GiB}
reps=${VET_REPS:-5}
round_trips=${VET_ROUND_TRIPS:-10000}
timeout=${VET_TIMEOUT:-300}
host=$(hostname -s)
dir=$outdir/$host

if [[ $# -gt 1 ]]; then
  echo "vet_node.sh: one argument at most (the output folder), got $#: $*" >&2
  exit 2
fi
if ! topo=$("$MEMPATH" topo 2>&1); then
  echo "vet_node.sh: '$MEMPATH topo' failed on $host (set MEMPATH to the mempath binary): $topo" >&2
  exit 2
fi
mkdir -p "$dir" || exit 1

common=(--timeout "$timeout")
[[ ${VET_OVERWRITE:-0} == 1 ]] && common+=(--overwrite)
in_cache=()
[[ ${VET_IN_CACHE:-0} == 1 ]] && in_cache=(--in-cache)
# `mempath topo` lists each GPU as a processor line "  gpuN  gpu ...".
has_gpu=0
grep -Eq '^ +gpu[0-9]+ +gpu ' <<<"$topo" && has_gpu=1

worst=0
# run NAME ARGS...: mempath ARGS into $dir/NAME.h5, remembering the worst exit code.
run() {
  local name=$1
  shift
  echo "vet_node.sh: $host: mempath $*"
  "$MEMPATH" "$@" "${common[@]}" --output "$dir/$name.h5"
  local rc=$?
  if ((rc != 0)); then
    echo "vet_node.sh: $host: mempath $name exited with $rc" >&2
    ((rc > worst)) && worst=$rc
  fi
  return 0
}

start=$SECONDS
run bw bw --all --op read,copy --threads all --kernel grid --reps "$reps" "${size_opt[@]}" "${in_cache[@]}"
if ((has_gpu)); then
  run memcpy memcpy --gpu all --direction h2d,d2h --engine ce --reps "$reps" "${size_opt[@]}"
  pingpong_pus=cpu0,gpu0
else
  echo "vet_node.sh: $host: no GPU, memcpy left out"
  pingpong_pus=cpu0
fi
run chase chase --all --size "$chase_size" --reps 1
run pingpong pingpong --pu "$pingpong_pus" --mem numa0 --round-trips "$round_trips"
echo "vet_node.sh: $host: done in $((SECONDS - start)) s, exit $worst, results in $dir"
exit "$worst"
