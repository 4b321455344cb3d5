#!/bin/bash
# Call 1 of the matrix: llama.cpp's builds started (detached), and while they build the tensor-core kernel
# tests and the A/B of branch q4k-dequant (doppler-q4k, temporary switch EXP_DEQ_VEC) on the matrix's files;
# then `bench/matrix.sh prepare` synthesizes the other shapes and waits for the builds.
set -uo pipefail
bash .llama-carry/build.sh
source bench/device-env.sh
echo "== km"; timeout 200 $B/km --test-threads=1 half gated dequantize parts 2>&1 | grep -E "test result|panicked" | tail -3
echo "== kt"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
M=/tmp/matrix
mkdir -p $M
SHAPES="llama3.1-8b llama3.2-1b qwen2.5-7b 4b qwen3-4b"
synth $SHAPES
pp() {
  EXP_DEQ_VEC=$4 timeout 90 $B/doppler-q4k bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $1 d$2 EXP_DEQ_VEC=$4 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do pp $s 0 $round 0; pp $s 0 $round 1; done
done
bash bench/matrix.sh prepare
echo "done after ${SECONDS}s"
