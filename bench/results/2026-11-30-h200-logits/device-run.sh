#!/bin/bash
# The H200's logits after a fixed 350-token prompt (prompt.txt), for comparison with lavapipe's
# (lavapipe.sh, compare.py): synthetic files of three shapes, whose prefill takes the f16 tensor-core products and the
# cooperative-matrix attention there (lavapipe runs the f32 kernels), and the same with
# DOPPLER_DISABLE_COOPERATIVE_MATRIX=1. Carry .gl and .device-carry (doppler).
set -uo pipefail
source bench/device-env.sh
D=bench/results/2026-11-30-h200-logits
for shape in 270m llama3.2-1b qwen2.5-1.5b; do
  synth $shape
  sha256sum $M/$shape.gguf | cut -c1-16
  $B/doppler logits --model $M/$shape.gguf --prompt "$(cat $D/prompt.txt)" --top 10 > $OUT/h200-$shape.json 2> $M/err || tail -3 $M/err
  DOPPLER_DISABLE_COOPERATIVE_MATRIX=1 $B/doppler logits --model $M/$shape.gguf --prompt "$(cat $D/prompt.txt)" --top 10 > $OUT/h200-f32-$shape.json 2> $M/err || tail -3 $M/err
done
echo "done after ${SECONDS}s"
