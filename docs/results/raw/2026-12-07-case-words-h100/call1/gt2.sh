#!/bin/bash
# Device call (#50, this session): the GPU-marked tests of the tree (the C++ case words ask
# every benchmark's rows before its case runs), the progress line of GPU commands in words,
# and the README's first command offline.
export PYTHONUNBUFFERED=1 LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.."
R=$OUT/gt2; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; date -u >> $R/gpu.txt
start=$SECONDS
stamp() { echo "$(date -u +%T) +$((SECONDS - start)) s: $*" | tee -a $R/steps.txt; }
rm -rf .venv
MEMPATH_NO_PIP=1 timeout 420 tests/run_tests.sh -m gpu -rs -p no:cacheprovider tests/python/test_{atomics,bw_contention,gemm,gpu_bw,latency,llm,memcpy,mpi,output_policy,stream,um,progress}.py > $R/run_tests.log 2>&1
stamp "tests/run_tests.sh -m gpu rc=$?"
grep -E "tests passed|tests failed" $R/run_tests.log >> $R/steps.txt
tail -n 12 $R/run_tests.log >> $R/steps.txt
# the counter of GPU cases, in the report's words (stderr; --progress forces it)
B=build/mempath
for args in "bw --pu gpu0 --mem gpu0,numa0 --op read,write --size 256MiB --reps 2" \
            "memcpy --gpu 0 --direction h2d,d2h --size 64MiB --reps 2" \
            "chase --pu gpu0 --mem gpu0 --size 64MiB --reps 1" \
            "atomics --pu gpu0 --reps 2" \
            "gemm --dtype fp16 --size 4096 --reps 2" \
            "stream --pu gpu0 --size 256MiB --reps 2" \
            "pingpong --pu cpu0,gpu0 --round-trips 2000"; do
  name=${args%% *}
  timeout 120 $B $args --progress --output /tmp/p-$name.h5 --overwrite > $R/progress-$name.out 2> $R/progress-$name.err
  echo "$args rc=$?" >> $R/progress.txt
  tr '\r' '\n' < $R/progress-$name.err | grep -E '^\[[0-9]+/' | sort -u >> $R/progress.txt
done
stamp "progress lines"
MEMPATH_NO_PIP=1 timeout 240 reframe_checks/run_suite.sh > $R/readme.log 2>&1
stamp "README first command exit $?"
tail -n 20 $R/readme.log > $R/readme-tail.log
ls report/*/ 2>/dev/null | head -50 > $R/report-files.txt
cd $OUT && tar czf gt2.tgz gt2 && rm -rf gt2
