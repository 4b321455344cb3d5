#!/bin/bash
# The prefill attention in one pass (`doppler`: each row's reference max rescaled only when a tile passes it by
# more than 8) against d8ca779's two passes (`doppler-base`) on an idle H200: first the GPU tests of this build
# (kernels_transformer checks the prefill attention against f64; `kt-mut`, a build whose rescaling leaves the
# accumulators unscaled, must fail it), then pp512 interleaved at depth 4096 on the
# shapes of every head size, a second round on the rows the last lease left short, and depth 0.
set -uo pipefail
source bench/device-env.sh
shapes="qwen2.5-7b phi3.5-mini llama3.2-3b llama3.2-1b 4b qwen3-4b llama3.1-8b"
synth $shapes
gpu_tests
# A mutant whose rescaling leaves the accumulators unscaled must fail the attention test.
echo "== kt-mut"; timeout 150 $B/kt-mut --test-threads=1 attention_matches 2>&1 | grep -E "test result|panicked" | cut -c1-300 | tail -3
for round in r1 r2; do
  for shape in $shapes; do
    [ $round = r2 ] && case $shape in qwen2.5-7b|phi3.5-mini|llama3.2-3b) ;; *) continue ;; esac
    pp512 doppler-base $shape 4096 $round; pp512 doppler $shape 4096 $round
  done
  echo "round $round after ${SECONDS}s"
done
for shape in qwen2.5-7b phi3.5-mini 4b; do pp512 doppler-base $shape 0 r1; pp512 doppler $shape 0 r1; done
echo "all after ${SECONDS}s"
