#!/bin/bash
# Which part of the H200's tensor-core prefill moves the synthetic Llama and Qwen logits (device-run.sh): a
# debug build (doppler-debug, this session's HEAD with two switches not kept: DOPPLER_DEBUG_NO_FLASH takes the
# scalar attention instead of the cooperative-matrix one, DOPPLER_DEBUG_NO_HALF the tiled products instead of the
# f16 ones), and, as a measure of how far each model carries a rounding difference, the f32 kernels with and
# without subgroups (other summation orders, f32 rounding only).
set -uo pipefail
source bench/device-env.sh
D=bench/results/2026-11-30-h200-logits
for shape in 270m llama3.2-1b qwen2.5-1.5b; do
  synth $shape
  for run in "no-flash DOPPLER_DEBUG_NO_FLASH=1" "no-half DOPPLER_DEBUG_NO_HALF=1" "no-flash-no-half DOPPLER_DEBUG_NO_FLASH=1 DOPPLER_DEBUG_NO_HALF=1" \
      "f32-no-subgroups DOPPLER_DISABLE_COOPERATIVE_MATRIX=1 DOPPLER_DISABLE_SUBGROUPS=1"; do
    set -- $run
    name=$1; shift
    env "$@" $B/doppler-debug logits --model $M/$shape.gguf --prompt "$(cat $D/prompt.txt)" --top 10 > $OUT/h200-$name-$shape.json 2> $M/err || tail -3 $M/err
  done
done
echo "done after ${SECONDS}s"
