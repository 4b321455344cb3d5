#!/bin/bash
# Where the tensor-core prefill attention's time goes: one binary, parts of attention_flash.wgsl
# switched off by temporary defines (EXP_FLASH=ABL_..., wrong results by design, ABL_SAFE keeps them
# finite), and the slabs of 32 dimensions (EXP_SLAB=32: twice or four times the threads a workgroup,
# right results). `doppler bench --profile` of pp512 at depth 4096: the attention row (µs a step) and pp512.
set -uo pipefail
source bench/device-env.sh
if [ -x $B/kt ]; then
  echo "== kt (slabs of 64)"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
  echo "== kt (slabs of 32)"; EXP_SLAB=32 timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
fi
synth llama3.2-1b llama3.1-8b qwen3-4b > /dev/null
run() { # LABEL SHAPE
  timeout 100 $B/doppler bench --model $M/$2.gguf --runs 2 --depth 4096 --prompt-tokens 512 --gen-tokens 4 --profile \
    > $M/p.txt 2> $M/err || tail -2 $M/err
  echo "$1 $2 $(grep -m1 '^pp512' $M/p.txt | cut -d' ' -f2) attention $(awk '$1=="attention" && NF==5 {print $3}' $M/p.txt | tail -1)"
}
for shape in llama3.2-1b llama3.1-8b; do
  for v in base ABL_SAFE ABL_SAFE,ABL_NO_PASS1 ABL_SAFE,ABL_NO_SCALAR ABL_SAFE,ABL_NO_EXP ABL_SAFE,ABL_NO_SCORES \
      ABL_SAFE,ABL_NO_PV ABL_SAFE,ABL_NO_STAGE ABL_SAFE,ABL_NO_FETCH \
      ABL_SAFE,ABL_NO_SCALAR,ABL_NO_SCORES,ABL_NO_PV,ABL_NO_STAGE,ABL_NO_FETCH slab32 base; do
    case $v in
      base) unset EXP_FLASH EXP_SLAB ;;
      slab32) unset EXP_FLASH; export EXP_SLAB=32 ;;
      *) unset EXP_SLAB; export EXP_FLASH=$v ;;
    esac
    run $v $shape
  done
  unset EXP_FLASH EXP_SLAB
done
for v in base slab32; do
  [ $v = slab32 ] && export EXP_SLAB=32
  run $v qwen3-4b
done
echo "done after ${SECONDS}s"
