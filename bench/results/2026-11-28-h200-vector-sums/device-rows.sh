#!/bin/bash
# The final build (7d04fb2) on the matrix rows still under llama.cpp Vulkan's prefill, as bench/matrix.sh runs
# them: `doppler bench --runs 2 --depth D --json` (pp512 / tg128), depths 0 and 4096.
set -uo pipefail
source bench/device-env.sh
SHAPES="llama3.2-3b qwen2.5-1.5b qwen2.5-7b qwen3-4b llama3.1-8b phi3.5-mini"
synth $SHAPES > /dev/null
for shape in $SHAPES; do
  for depth in 0 4096; do
    timeout 60 $B/doppler bench --model $M/$shape.gguf --runs 2 --depth $depth --json > $M/r.json 2> $M/err || tail -3 $M/err
    python3 -c "import json;r=json.load(open('$M/r.json'));print('$shape d$depth pp512', round(r['pp_tokens_per_second']['mean']), 'tg128', round(r['tg_tokens_per_second']['mean'],1))"
  done
done
echo "done after ${SECONDS}s"
