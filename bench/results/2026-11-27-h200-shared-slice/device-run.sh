#!/bin/bash
# Prefill's q, k and v products from one dequantization of the stacked rows, unsplit where their tiles
# together fill the GPU: doppler-base (7904fc5) against doppler, pp512 interleaved; product tests first.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 200 $B/km --test-threads=1 parts half gated dequantize 2>&1 | grep -E "^test |test result|panicked" | tail -12
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.1-8b llama3.2-1b qwen2.5-7b 4b phi3.5-mini qwen3-4b"
synth $SHAPES
for bin in doppler-base doppler; do
  echo "== perplexity $bin"; timeout 90 $B/$bin perplexity --model $M/llama3.1-8b.gguf --file README.md --ctx 1024 2>&1 | tail -1
done
# pp BINARY SHAPE DEPTH LABEL
pp() {
  timeout 90 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do pp doppler-base $s 0 $round; pp doppler $s 0 $round; done
done
for s in llama3.1-8b qwen3-4b; do pp doppler-base $s 4096 r1; pp doppler $s 4096 r1; done
timeout 90 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --gen-tokens 4 --profile > $OUT/profile-llama3.1-8b-d0.txt 2>&1
grep -A 24 "µs/prefill" $OUT/profile-llama3.1-8b-d0.txt
echo "done after ${SECONDS}s"
