#!/bin/bash
# GPU-marked tests of the tree as it stands (issue 50's families.def change reaches every family's tables)
export PYTHONUNBUFFERED=1 LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.."
R=$OUT/gt; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python3 -c "import pytest, hypothesis" > $R/modules.txt 2>&1; echo "modules rc=$?" >> $R/modules.txt
rm -rf .venv; t0=$SECONDS
MEMPATH_NO_PIP=1 timeout 540 tests/run_tests.sh -m gpu -rs -p no:cacheprovider tests/python/test_{atomics,bw_contention,gemm,gpu_bw,latency,llm,memcpy,mpi,output_policy,stream,um}.py > $R/run_tests.log 2>&1
echo "tests/run_tests.sh -m gpu rc=$? in $((SECONDS - t0)) s" > $R/steps.txt
grep -E "tests passed|tests failed" $R/run_tests.log >> $R/steps.txt
tail -n 30 $R/run_tests.log >> $R/steps.txt
cd $OUT && tar czf gt.tgz gt && rm -rf gt
