#!/bin/bash
# Device call 1 (H100): `mempath llm` correctness, Fig. 17's placements, the offload sweeps.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
R=$OUT/llm; mkdir -p $R
B=.device/build
mkdir -p .device/src && cp -r src/llm src/core .device/src/   # the referee beside the binary: bin/../src/llm
ldd $B/mempath | grep "not found" && { echo "carried binary does not load"; exit 3; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> $R/gpu.txt 2>&1
start=$SECONDS
step() {  # NAME SECONDS ARGS...: one run, its output kept, never the end of the call
  local name=$1 limit=$2; shift 2
  local left=$(( 575 - (SECONDS - start) ))
  [ "$left" -lt 20 ] && { echo "SKIP $name: no time left" | tee -a $R/steps.txt; return; }
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$SECONDS
  if [ "$name" = "${name#old_}" ]; then
    timeout -s INT $limit $B/mempath llm "$@" --output $R/$name.h5 > $R/$name.log 2>&1
  else  # f7bd62b's script and its decode library, for the same-call comparison
    timeout -s INT $limit python3 .device/old/repo/src/llm/llm_placement.py "$@" --decode-lib .device/old/libmempath_decode.so \
      --lib $B/libmempath_placement.so --mempath $B/mempath --output $R/$name.h5 > $R/$name.log 2>&1
  fi
  echo "$name rc=$? $((SECONDS - t0)) s" | tee -a $R/steps.txt
  grep -E "^MEMPATH llm" $R/$name.log | sed 's/ dtype=.*placement=/ placement=/' | cut -c1-230
}
step tiny 60 --model tiny --dtype bf16 --placement hbm,host,default --offload 50%,all --prompt-tokens 8 --new-tokens 16
step old_hbm 60 --model llama-2-7b --dtype fp16 --new-tokens 100 --prompt-tokens empty --placement hbm
step fig17_7b 90 --model llama-2-7b --dtype fp16 --new-tokens 100 --prompt-tokens empty --placement default,hbm,host,host-remote,peer
step old_host 50 --model llama-2-7b --dtype fp16 --new-tokens 10 --prompt-tokens empty --placement host
step sweep_7b 110 --model llama-2-7b --dtype fp16 --new-tokens 48 --prompt-tokens empty --offload 0,10%,30%,60%,all --way in-place,streamed --reps 2
step big_70b 120 --model llama-2-70b --dtype fp16 --new-tokens 12 --prompt-tokens empty --offload 50% --way in-place,streamed --reps 1
step sweep_13b 90 --model llama-2-13b --dtype fp16 --new-tokens 48 --prompt-tokens empty --offload 10%,all --way in-place,streamed --reps 2
step vllm_7b 50 --model llama-2-7b --dtype fp16 --new-tokens 48 --prompt-tokens empty --offload 0,25%,50% --way vllm --reps 2
cd $OUT && tar czf llm2.tgz llm && rm -rf llm
