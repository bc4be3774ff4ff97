#!/bin/bash
# Device call 1 (#49), each step with its own time cap (call limit 600 s):
#  1 the README's first command (acceptance tag; builds build/)
#  2 this card's reference runs and the kinds' file (H100 recorded + this card)
#  3 50 checks alone on the node (a stand-in scontrol records what it is asked), wall time each
#  4 the two-node cluster sharing the GPU, healthcheck.sh as slurmd's HealthCheckProgram every 10 s
#  5 n2 loses its GPU to CUDA (CUDA_VISIBLE_DEVICES=): drained with the cause, then resumes itself
#  6 vet_fleet.sbatch through centre_runs.sh (healthy, retest included); then the checks counted
export PYTHONUNBUFFERED=1 LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.."
repo=$PWD
R=$OUT/${CALL:-hc3}; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
start=$SECONDS
stamp() { echo "$(date +%T) +$((SECONDS - start)) s: $*" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv > $R/gpu.txt 2>&1
git log -1 --format='%H %cI' > $R/commit.txt 2>/dev/null
t0=$(date +%s%N)
rm -rf .venv; MEMPATH_NO_PIP=1 MEMPATH_TAG=acceptance timeout 240 reframe_checks/run_suite.sh > $R/readme.log 2>&1
stamp "README first command exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
tail -n 30 $R/readme.log > $R/readme-tail.log
[ -x build/mempath ] || { stamp "no build: stop"; cd $OUT && tar czf $(basename $R).tgz $(basename $R); exit 1; }
cat > /tmp/scontrol <<'S'
#!/bin/bash
echo "$(date +%T) $*" >> /tmp/scontrol.log
[[ $1 == show ]] && echo "NodeName=$4 Arch=x86_64 Gres=gpu:1 State=IDLE ThreadsPerCore=1"
exit 0
S
chmod +x /tmp/scontrol
for i in 1 2 3; do
  MEMPATH_HC_SCONTROL=/tmp/scontrol MEMPATH_HC_STATE=/tmp/ref$i MEMPATH_HC_REPS=15 MEMPATH_HC_KINDS=none MEMPATH_HC_CONFIG=/dev/null \
    MEMPATH_HC_PYTHON=python3 slurm/healthcheck.sh > $R/ref$i.log 2>&1
  cp -r /tmp/ref$i/last $R/ref$i
done
H100=docs/results/raw/2026-12-07-healthcheck-h100/call1
python3 -m analysis healthcheck kind-reference $H100/ref1 $H100/ref2 $H100/ref3 $R/ref1 $R/ref2 $R/ref3 -o $R/kinds.json > $R/kinds.log 2>&1
stamp "references: $(tr '\n' ' ' < $R/kinds.log)"
[ -s $R/kinds.json ] || cp .device/hcx/kinds.json $R/kinds.json
s3=$SECONDS
for i in $(seq 1 50); do
  [ $((SECONDS - s3)) -gt 150 ] && { stamp "checks alone stopped after $((i - 1)): the step's time"; break; }
  t0=$(date +%s%N)
  MEMPATH_HC_SCONTROL=/tmp/scontrol MEMPATH_HC_STATE=/tmp/alone MEMPATH_HC_KINDS=$R/kinds.json MEMPATH_HC_CONFIG=/dev/null \
    MEMPATH_HC_PYTHON=python3 slurm/healthcheck.sh > $R/alone.log 2>&1
  rc=$?; cat $R/alone.log >> $R/alone-all.log
  echo "check $i rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 )) $(tail -n 1 $R/alone.log)" >> $R/alone-checks.txt
done
cp /tmp/alone/health-log.csv $R/alone-health-log.csv; cp /tmp/scontrol.log $R/alone-scontrol.log
stamp "checks alone: $(grep -c rc=0 $R/alone-checks.txt) rc=0 of $(wc -l < $R/alone-checks.txt), $(grep -c drain $R/alone-scontrol.log) drain calls, $(grep -ci retest $R/alone-all.log) retest lines"
W=/tmp/hcw; mkdir -p $W
cat > $W/wrapper.sh <<W
#!/bin/bash
n=\$(hostname -s)
export SLURM_CONF=\$(cat /run/mempath-slurm-cluster.path)/etc/slurm.conf
export MEMPATH_HC_SCONTROL=\$(cat /run/mempath-slurm-cluster.path)/bin/scontrol
[ -x \$MEMPATH_HC_SCONTROL ] || MEMPATH_HC_SCONTROL=scontrol
export PATH=\$(dirname \$MEMPATH_HC_SCONTROL):\$PATH PYTHONPATH=/tmp/site
export MEMPATH=$repo/build/mempath MEMPATH_HC_PYTHON=python3 MEMPATH_HC_STATE=$W/state-\$n MEMPATH_HC_CONFIG=/dev/null
export MEMPATH_HC_KINDS=$R/kinds.json MEMPATH_HC_LOCK=$W/lock MEMPATH_HC_RESUME=1
set -a; [ -f $W/scenario-\$n ] && . $W/scenario-\$n; set +a
exec $repo/slurm/healthcheck.sh >> $W/out-\$n 2>&1
W
chmod +x $W/wrapper.sh
# at start the nodes' gres is hidden from the check (a drain at start stops cluster.sh)
echo 'MEMPATH_HC_GRES=' > $W/scenario-n1; echo 'MEMPATH_HC_GRES=' > $W/scenario-n2
MEMPATH_SLURM_DEBS=$repo/.device/debs MEMPATH_SLURM_HEALTHCHECK=$W/wrapper.sh MEMPATH_SLURM_HEALTHCHECK_INTERVAL=10 \
  timeout 120 slurm/ci/cluster.sh start > $R/cluster.log 2>&1 || { stamp "cluster start failed"; tail -n 30 $R/cluster.log > $R/cluster-tail.log; }
rm -f $W/scenario-n1 $W/scenario-n2
stamp "cluster start done"
state() { slurm/ci/cluster.sh exec sinfo -h -N -o "%N %T %E" | sort -u | tr '\n' ';'; }
rows() { cat $W/state-$1/health-log.csv 2>/dev/null | tail -n +2 | wc -l; }
for i in $(seq 40); do [ "$(rows n1)" -ge 2 ] && [ "$(rows n2)" -ge 2 ] && break; sleep 2; done
stamp "first checks: n1 $(rows n1) n2 $(rows n2); $(state)"
echo 'CUDA_VISIBLE_DEVICES=' > $W/scenario-n2
for i in $(seq 25); do state | grep -q "n2 drain" && break; sleep 2; done
stamp "lost GPU: $(state)"
rm -f $W/scenario-n2
for i in $(seq 25); do state | grep -q "n2 idle" && break; sleep 2; done
stamp "healthy again: $(state)"
left=$((560 - (SECONDS - start)))
[ $left -gt 60 ] && { CENTRE_PYTHON=python3 timeout $left slurm/ci/centre_runs.sh $R/centre vet > $R/centre-vet.log 2>&1; stamp "vet exit $? (limit $left s); $(state)"; }
cat $R/centre/runs.tsv >> $R/steps.txt 2>/dev/null
for n in n1 n2; do cp $W/state-$n/health-log.csv $R/health-log-$n.csv; cp $W/out-$n $R/out-$n.log; done
cp -r $W/state-n2/last-drain $R/n2-last-drain 2>/dev/null
slurm/ci/cluster.sh stop > /dev/null 2>&1
rm -rf $R/centre/*/rfm/stage; find $R -name '*.h5' -size +2M -delete
cd $OUT && tar czf $(basename $R).tgz $(basename $R) && rm -rf $(basename $R)
