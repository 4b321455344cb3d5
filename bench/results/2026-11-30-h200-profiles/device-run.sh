#!/bin/bash
# Where the time goes on the rows issue 17's last lease left short (`../2026-11-30-h200-const-params-done-when/`),
# with that lease's build: Llama 3.2 3B all IQ4_XS decode at depth 0, and Qwen2.5 7B and Phi-3.5 mini prefill
# (pp512) at depth 4096. Every dispatch is timed alone, so the sums exceed the unprofiled step.
set -uo pipefail
source bench/device-env.sh
synth l3b-iq4xs qwen2.5-7b phi3.5-mini
timeout 60 $B/doppler bench --model $M/l3b-iq4xs.gguf --runs 1 --prompt-tokens 64 --gen-tokens 128 --profile \
  > $OUT/profile-l3b-iq4xs-decode-d0.txt 2>&1
for shape in qwen2.5-7b phi3.5-mini; do
  timeout 90 $B/doppler bench --model $M/$shape.gguf --runs 1 --depth 4096 --gen-tokens 4 --profile \
    > $OUT/profile-$shape-pp512-d4096.txt 2>&1
done
echo "all after ${SECONDS}s"
