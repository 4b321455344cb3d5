#!/bin/bash
# The committed build (`doppler`) against d9aac65 (`doppler-base`) on the shapes calls 1 and 3 left out: Gemma 3
# 4B and Phi-3.5 mini (the per-head slices kernel, so only the merge changed for them), Llama 3.1 8B and
# Mistral 7B (packed), tg128 one round at depths 0 and 4096.
set -uo pipefail
source bench/device-env.sh
synth 4b phi3.5-mini llama3.1-8b mistral-7b
run() { timeout 90 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 64 --gen-tokens 128 --json \
    > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$2 d$3 $1 tg128', round(r['tg_tokens_per_second']['mean'], 1))"; }
for depth in 0 4096; do
  for file in 4b phi3.5-mini llama3.1-8b mistral-7b; do run doppler-base $file $depth; run doppler $file $depth; done
done
echo "all after ${SECONDS}s"
