#!/bin/bash
# Fourth call (H200): prefill K splits chosen for whole waves. doppler = a560c67 with one row a decode workgroup
# for 2048-4095-row matrices, and a temporary switch DOPPLER_WAVE_FILL=P (not committed): K is split into the
# fewest parts, from the ceil(128 / tiles) of now, whose workgroups fill their last wave of 128 at least P%
# (0: now). Qwen3 4B and Gemma 3 4B (2560 rows: 80 tiles, 2 splits now, 160 workgroups) and Llama 3.2 3B and
# Phi-3.5 (3072 rows: 96 tiles, 192) launch a second wave of 32-64 workgroups; at 85% they take 3 and 4 splits.
set -uo pipefail
source bench/device-env.sh
synth qwen3-4b llama3.2-3b phi3.5-mini 4b qwen2.5-1.5b > $M/synth.log 2>&1
echo "ready after ${SECONDS}s"
pp() {  # pp SHAPE DEPTH FILL ROUND
  DOPPLER_WAVE_FILL=$3 timeout 90 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $1 d$2 fill=$3 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do for shape in qwen3-4b llama3.2-3b; do pp $shape 4096 0 $round; pp $shape 4096 85 $round; done; done
pp phi3.5-mini 4096 0 r1; pp phi3.5-mini 4096 85 r1
for shape in 4b qwen2.5-1.5b; do pp $shape 0 0 r1; pp $shape 0 85 r1; done
echo "done after ${SECONDS}s"
