#!/bin/bash
# The f16 prefill products decoding their weight tiles from the GGUF blocks as they stage them
# (QUANT_WEIGHTS; the temporary switch EXP_FUSED=1) against the separate dequantization (79b7020's way),
# one binary; the product tests under both first.
set -uo pipefail
source bench/device-env.sh
for f in 0 1; do
  echo "== km EXP_FUSED=$f"; EXP_FUSED=$f timeout 200 $B/km --test-threads=1 half gated 2>&1 | grep -E "^test |test result|panicked|worst" | tail -30
done
SHAPES="llama3.1-8b llama3.2-1b qwen2.5-7b 4b phi3.5-mini qwen3-4b"
synth $SHAPES
for f in 0 1; do
  echo "== perplexity EXP_FUSED=$f"; EXP_FUSED=$f timeout 90 $B/doppler perplexity --model $M/llama3.2-1b.gguf --file README.md --ctx 1024 2>&1 | tail -1
done
# pp SHAPE DEPTH LABEL FUSED
pp() {
  EXP_FUSED=$4 timeout 90 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $1 d$2 EXP_FUSED=$4 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do pp $s 0 $round 0; pp $s 0 $round 1; done
done
EXP_FUSED=1 timeout 90 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --gen-tokens 4 --profile > $OUT/profile-llama3.1-8b-d0-fused.txt 2>&1
grep -A 30 "µs/prefill" $OUT/profile-llama3.1-8b-d0-fused.txt | head -24
echo "done after ${SECONDS}s"
