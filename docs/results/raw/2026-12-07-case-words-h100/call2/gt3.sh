#!/bin/bash
# Device call 2 (#50): the README's first command offline at the acceptance tag (as the last
# session's record), and GPU bw's progress line in words.
export PYTHONUNBUFFERED=1 LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.."
R=$OUT/gt3; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; date -u >> $R/gpu.txt
start=$SECONDS
stamp() { echo "$(date -u +%T) +$((SECONDS - start)) s: $*" | tee -a $R/steps.txt; }
rm -rf .venv report
MEMPATH_NO_PIP=1 MEMPATH_TAG=acceptance timeout 400 reframe_checks/run_suite.sh > $R/readme.log 2>&1
stamp "README first command (MEMPATH_TAG=acceptance) exit $?"
tail -n 20 $R/readme.log > $R/readme-tail.log
ls report/*/ 2>/dev/null > $R/report-files.txt
for args in "bw --all --pu-kind gpu --op read --size 256MiB --reps 2" "pingpong --pu cpu0,gpu0 --round-trips 2000"; do
  timeout 60 build/mempath $args --progress --output /tmp/p.h5 --overwrite > /dev/null 2> $R/p.err
  echo "$args rc=$?" >> $R/progress.txt
  tr '\r' '\n' < $R/p.err | grep -E '^\[[0-9]+/' | sed 's/ *ETA.*//' | sort -u >> $R/progress.txt
done
stamp "progress lines"
cd $OUT && tar czf gt3.tgz gt3 && rm -rf gt3
