#!/bin/bash
# The f16 dequantization of the prefill products in wide parts (Q4_K, Q6_K) and one input conversion for
# the products of one input: doppler-base (6812d1c) against doppler, pp512 interleaved (doppler also with
# EXP_HALF_TARGET=128, a temporary switch: fewer K splits), the tensor-core product tests and perplexity
# first, a tg128 check of the decode products that now share `wide_part`, and a profile of Llama 8B.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 150 $B/km --test-threads=1 half dequantize q8 wide 2>&1 | grep -E "^test |test result|panicked|worst" | tail -30
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
SHAPES="llama3.1-8b llama3.2-1b qwen2.5-7b 4b phi3.5-mini"
synth $SHAPES
for bin in doppler-base doppler; do
  echo "== perplexity $bin"; timeout 90 $B/$bin perplexity --model $M/llama3.2-1b.gguf --file README.md --ctx 1024 2>&1 | tail -1
done
# pp BINARY SHAPE DEPTH LABEL [ENV=VALUE]
pp() {
  timeout 90 env ${5:-} $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1 ${5:-} pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do pp doppler-base $s 0 $round; pp doppler $s 0 $round; pp doppler $s 0 $round EXP_HALF_TARGET=128; done
done
for s in llama3.1-8b 4b; do pp doppler-base $s 4096 r1; pp doppler $s 4096 r1; done
for s in llama3.1-8b llama3.2-1b; do tg128 doppler-base $s 0 r1; tg128 doppler $s 0 r1; done
timeout 90 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --gen-tokens 4 --profile > $OUT/profile-llama3.1-8b-d0.txt 2>&1
head -60 $OUT/profile-llama3.1-8b-d0.txt | grep -E "f16|ffn|attn|attention|prefill|pp512"
echo "done after ${SECONDS}s"
