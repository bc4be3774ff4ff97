# shellcheck shell=bash
# Sourced by the job scripts (bash): the job's own deadline, so that a job always keeps the
# time to write what it has and its report. A per-case limit (mempath --timeout) bounds one
# stuck case; the sum of such limits over a job's commands far exceeds its --time (the
# vetting preset: 13 commands x 300 s on a quad GH200, in a 30 min job), so the job
# instead gives each command only the time left before its own deadline.
#
#   job_clock_start RESERVE [LIMIT]
#       JOB_DEADLINE (epoch seconds; empty: none known) = the earliest of the job's end
#       (SLURM_JOB_END_TIME, else `squeue -o %e` of SLURM_JOB_ID), MEMPATH_DEADLINE (an
#       epoch a parent script passes to its steps) and now + LIMIT seconds, less RESERVE
#       seconds kept for writing and reporting. Exit status 2 with one line for a bad value.
#   job_left     seconds left before JOB_DEADLINE (<= 0: none), or nothing without a deadline
#   job_run LIMIT NAME COMMAND...
#       COMMAND with at most LIMIT seconds (0: no own limit) and never past JOB_DEADLINE:
#       SIGTERM there (mempath keeps its finished cases and removes its partial file), SIGKILL
#       JOB_KILL_GRACE (30) seconds later. Returns COMMAND's status; 124 when it was cut
#       (one line on stderr) or not started because no time was left.
JOB_DEADLINE=
JOB_KILL_GRACE=${JOB_KILL_GRACE:-30}

_job_clock_bad() { echo "job_clock.sh: $1" >&2; return 2; }

job_clock_start() {
  local reserve=$1 limit=${2:-} end='' now candidate
  now=$(date +%s)
  [[ $reserve =~ ^[0-9]+$ ]] || { _job_clock_bad "reserve '$reserve' is not a number of seconds"; return 2; }
  [[ -z $limit || $limit =~ ^[1-9][0-9]*$ ]] ||
    { _job_clock_bad "time limit '$limit' is not a positive number of seconds"; return 2; }
  if [[ -n ${SLURM_JOB_END_TIME:-} ]]; then
    [[ $SLURM_JOB_END_TIME =~ ^[0-9]+$ ]] ||
      { _job_clock_bad "SLURM_JOB_END_TIME='$SLURM_JOB_END_TIME' is not epoch seconds"; return 2; }
    end=$SLURM_JOB_END_TIME
  elif [[ -n ${SLURM_JOB_ID:-} ]] && command -v squeue >/dev/null; then
    # Slurm before 23.02 does not export the end; squeue prints it in local time.
    candidate=$(timeout 30 squeue -h -j "$SLURM_JOB_ID" -o %e 2>/dev/null | head -n1)
    [[ $candidate =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] && end=$(date -d "$candidate" +%s 2>/dev/null)
  fi
  if [[ -n ${MEMPATH_DEADLINE:-} ]]; then
    [[ $MEMPATH_DEADLINE =~ ^[0-9]+$ ]] ||
      { _job_clock_bad "MEMPATH_DEADLINE='$MEMPATH_DEADLINE' is not epoch seconds"; return 2; }
    [[ -z $end ]] || ((MEMPATH_DEADLINE < end)) && end=$MEMPATH_DEADLINE
  fi
  if [[ -n $limit ]]; then
    candidate=$((now + limit))
    [[ -z $end ]] || ((candidate < end)) && end=$candidate
  fi
  [[ -z $end ]] || JOB_DEADLINE=$((end - reserve))
  return 0
}

job_left() {
  [[ -n $JOB_DEADLINE ]] && echo $((JOB_DEADLINE - $(date +%s)))
  return 0
}

job_run() {
  local limit=$1 name=$2 left rc
  shift 2
  left=$(job_left)
  if [[ -n $left ]] && ((left <= 0)); then
    echo "job_clock.sh: $name not started: the job's deadline has passed (its reserve is kept for the report)" >&2
    return 124
  fi
  [[ -n $left ]] && { ((limit == 0)) || ((left < limit)); } && limit=$left
  if ((limit == 0)); then
    "$@"
    return
  fi
  timeout -s TERM -k "$JOB_KILL_GRACE" "$limit" "$@"
  rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "job_clock.sh: $name cut after $limit s ($([[ $limit == "${left:-}" ]] && echo "the job's deadline" || echo "its limit")); what it finished is kept" >&2
    return 124
  fi
  return "$rc"
}
