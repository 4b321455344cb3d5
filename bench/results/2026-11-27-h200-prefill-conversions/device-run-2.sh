#!/bin/bash
# Second round: the f16 dequantization 8 values a thread (one 16-byte store; EXP_DEQ=4 switches back to 4),
# K split toward 128 workgroups (EXP_HALF_TARGET=256 switches back), the gated feed-forward input in one
# product (GATED), one input conversion per group of products of one input. doppler-base is 6812d1c.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 200 $B/km --test-threads=1 half dequantize gated 2>&1 | grep -E "^test |test result|panicked|worst" | tail -30
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
SHAPES="llama3.1-8b llama3.2-1b qwen2.5-7b 4b phi3.5-mini qwen3-4b"
synth $SHAPES
for m in llama3.2-1b 4b; do
  for bin in doppler-base doppler; do
    echo "== perplexity $m $bin"; timeout 90 $B/$bin perplexity --model $M/$m.gguf --file README.md --ctx 1024 2>&1 | tail -1
  done
done
# pp BINARY SHAPE DEPTH LABEL [ENV=VALUE]
pp() {
  timeout 90 env ${5:-} $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1 ${5:-} pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do
    pp doppler-base $s 0 $round; pp doppler $s 0 $round; pp doppler $s 0 $round EXP_DEQ=4; pp doppler $s 0 $round EXP_HALF_TARGET=256
  done
done
for s in llama3.1-8b 4b qwen3-4b; do pp doppler-base $s 4096 r1; pp doppler $s 4096 r1; done
timeout 90 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --gen-tokens 4 --profile > $OUT/profile-llama3.1-8b-d0.txt 2>&1
grep -A 40 "µs/prefill" $OUT/profile-llama3.1-8b-d0.txt | head -30
echo "done after ${SECONDS}s"
