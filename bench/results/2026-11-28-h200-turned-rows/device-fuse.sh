#!/bin/bash
# Whether the decode attention slices should take over the q/k step (norm, RoPE, KV store) per shape:
# tg128 with the step fused (as committed) and as its own dispatch (EXP_NO_FUSE), depths 0 and 4096.
set -uo pipefail
source bench/device-env.sh
SHAPES="qwen3-4b qwen2.5-1.5b qwen2.5-7b phi3.5-mini gemma3-1b gemma3-4b llama3.2-1b"
synth $SHAPES > /dev/null
for depth in 0 4096; do
  for shape in $SHAPES; do
    tg128 doppler $shape $depth fused
    EXP_NO_FUSE=1 tg128 doppler $shape $depth separate
  done
done
echo "done after ${SECONDS}s"
