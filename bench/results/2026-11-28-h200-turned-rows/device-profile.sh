#!/bin/bash
# Where Qwen3 4B's decode goes at depth 0: kernel tables (`--profile`) of Qwen3 4B with and without the q/k
# norms' reduction in the attention slices (EXP_SKIP_NORM: wrong values, same work otherwise) and of Llama
# 8B and 3B; tg128 unprofiled with and without; the chained dispatch floor (decode_matvec's tiny case).
set -uo pipefail
source bench/device-env.sh
mv $B/decode_matvec-* $B/decode_matvec
synth qwen3-4b llama3.1-8b llama3.2-3b > /dev/null
$B/decode_matvec --filter tiny
prof() { timeout 90 $B/doppler bench --model $M/$1.gguf --runs 1 --prompt-tokens 64 --gen-tokens 128 --profile 2>&1 | head -24; }
prof qwen3-4b
EXP_SKIP_NORM=1 prof qwen3-4b
prof llama3.1-8b
prof llama3.2-3b
for round in r1 r2; do
  tg128 doppler qwen3-4b 0 "$round base"
  EXP_SKIP_NORM=1 tg128 doppler qwen3-4b 0 "$round skip-norm"
done
echo "done after ${SECONDS}s"
