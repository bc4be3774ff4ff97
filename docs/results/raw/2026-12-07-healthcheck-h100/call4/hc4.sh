#!/bin/bash
# Device call 2 (#49): the build, then steps 4-6 of call 1 with the checks given the Python they need under slurmd, and the acceptance after the vetting.
# Call 1, each step with its own time cap (call limit 600 s):
#  1 the README's first command (acceptance tag; builds build/)
#  2 this card's reference runs and the kinds' file (H100 recorded + this card)
#  3 50 checks alone on the node (a stand-in scontrol records what it is asked), wall time each
#  4 the two-node cluster sharing the GPU, healthcheck.sh as slurmd's HealthCheckProgram every 10 s
#  5 n2 loses its GPU to CUDA (CUDA_VISIBLE_DEVICES=): drained with the cause, then resumes itself
#  6 vet_fleet.sbatch through centre_runs.sh (healthy, retest included); then the checks counted
export PYTHONUNBUFFERED=1 LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.."
repo=$PWD
R=$OUT/${CALL:-hc4}; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
start=$SECONDS
stamp() { echo "$(date +%T) +$((SECONDS - start)) s: $*" | tee -a $R/steps.txt; }
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv > $R/gpu.txt 2>&1
git log -1 --format='%H %cI' > $R/commit.txt 2>/dev/null
rm -rf .venv
MEMPATH_NO_PIP=1 bash -c 'source site_configs/setup_env.sh' > $R/setup.log 2>&1
stamp "setup_env (build) exit $?"
[ -x build/mempath ] && [ -x build/mempath-mpi ] || { stamp "no build: stop"; tail -n 30 $R/setup.log; cd $OUT && tar czf $(basename $R).tgz $(basename $R); exit 1; }
cp .device/kinds.json $R/kinds.json
SITE=$(python3 -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
PY=$(command -v python3)
W=/tmp/hcw; mkdir -p $W
cat > $W/wrapper.sh <<W
#!/bin/bash
n=\$(hostname -s)
export SLURM_CONF=\$(cat /run/mempath-slurm-cluster.path)/etc/slurm.conf
export MEMPATH_HC_SCONTROL=\$(cat /run/mempath-slurm-cluster.path)/bin/scontrol
[ -x \$MEMPATH_HC_SCONTROL ] || MEMPATH_HC_SCONTROL=scontrol
export PATH=\$(dirname \$MEMPATH_HC_SCONTROL):\$PATH PYTHONPATH=/tmp/site:$SITE HOME=$HOME
export MEMPATH=$repo/build/mempath MEMPATH_HC_PYTHON=$PY MEMPATH_HC_STATE=$W/state-\$n MEMPATH_HC_CONFIG=/dev/null
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
stamp "first checks (s, rows): n1 $(rows n1) n2 $(rows n2); $(state)"
echo 'CUDA_VISIBLE_DEVICES=' > $W/scenario-n2
for i in $(seq 25); do state | grep -q "n2 drain" && break; sleep 2; done
stamp "lost GPU: $(state)"
rm -f $W/scenario-n2
for i in $(seq 25); do state | grep -q "n2 idle" && break; sleep 2; done
stamp "healthy again: $(state)"
CENTRE_PYTHON=python3 timeout 120 slurm/ci/centre_runs.sh $R/centre vet > $R/centre-vet.log 2>&1; stamp "vet exit $?; $(state)"
left=$((565 - (SECONDS - start)))
[ $left -gt 60 ] && { CENTRE_PYTHON=python3 timeout $left slurm/ci/centre_runs.sh $R/centre acceptance > $R/centre-acc.log 2>&1; stamp "acceptance exit $? (limit $left s); $(state)"; }
cat $R/centre/runs.tsv >> $R/steps.txt 2>/dev/null
for n in n1 n2; do cp $W/state-$n/health-log.csv $R/health-log-$n.csv; cp $W/out-$n $R/out-$n.log; done
cp -r $W/state-n2/last-drain $R/n2-last-drain 2>/dev/null
slurm/ci/cluster.sh stop > /dev/null 2>&1
rm -rf $R/centre/*/rfm/stage; find $R -name '*.h5' -size +2M -delete
cd $OUT && tar czf $(basename $R).tgz $(basename $R) && rm -rf $(basename $R)
