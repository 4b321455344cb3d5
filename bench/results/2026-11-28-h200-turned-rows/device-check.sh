#!/bin/bash
# The committed build on the H200: the attention kernel tests and the transformers fixtures, then
# `doppler bench --runs 2 --depth D` (pp512 / tg128, as bench/matrix.sh runs it) on the shapes whose
# decode attention slices turn their rows (Qwen) or keep rotating in place (Llama), and Phi-3.5.
set -uo pipefail
source bench/device-env.sh
echo "== kt"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="qwen3-4b qwen2.5-1.5b qwen2.5-7b llama3.2-1b llama3.2-3b llama3.1-8b phi3.5-mini"
synth $SHAPES > /dev/null
for shape in $SHAPES; do
  for depth in 0 4096; do
    timeout 120 $B/doppler bench --model $M/$shape.gguf --runs 2 --depth $depth --json > $M/r.json 2> $M/err || tail -3 $M/err
    cp $M/r.json $OUT/$shape-d$depth.json 2>/dev/null
    python3 -c "import json;r=json.load(open('$M/r.json'));print('$shape d$depth pp512', round(r['pp_tokens_per_second']['mean']), 'tg128', round(r['tg_tokens_per_second']['mean'],1))"
  done
done
echo "done after ${SECONDS}s"
