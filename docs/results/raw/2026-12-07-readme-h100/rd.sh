#!/bin/bash
# The README's first command at HEAD on the GPU node, then vet_fleet.sbatch on the two-node cluster
export PYTHONUNBUFFERED=1 LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.."
R=$OUT/rd; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
git log -1 --format=%H > $R/commit.txt 2>/dev/null; nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
rm -rf .venv; t0=$SECONDS
MEMPATH_NO_PIP=1 MEMPATH_TAG=acceptance timeout 200 reframe_checks/run_suite.sh > $R/readme.log 2>&1
echo "README first command exit $? in $((SECONDS - t0)) s" > $R/steps.txt
ls report/*/index.html >> $R/steps.txt 2>&1; d=$(ls -d report/*/ | tail -1); ls $d | wc -l >> $R/steps.txt; cp $d/summary.md $R/ 2>/dev/null
grep -E "passed|failed" $R/readme.log | tail -3 >> $R/steps.txt
t0=$SECONDS
MEMPATH_SLURM_DEBS=$PWD/.device/debs timeout 90 slurm/ci/cluster.sh start > $R/cluster.log 2>&1; echo "cluster start $? in $((SECONDS - t0)) s" >> $R/steps.txt
t0=$SECONDS; CENTRE_PYTHON=python3 timeout 150 slurm/ci/centre_runs.sh $R/centre vet > $R/vet.log 2>&1; echo "vet exit $? in $((SECONDS - t0)) s" >> $R/steps.txt
cat $R/centre/runs.tsv >> $R/steps.txt 2>/dev/null
slurm/ci/cluster.sh stop >/dev/null 2>&1
tail -n 15 $R/readme.log > $R/readme-tail.log; rm -rf $R/centre
cd $OUT && tar czf rd.tgz rd && rm -rf rd
