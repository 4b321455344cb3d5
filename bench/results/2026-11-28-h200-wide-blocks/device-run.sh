#!/bin/bash
# The f16 prefill product with subgroup blocks of 64 tokens × 64 rows (4 subgroups, 128 threads a 128 × 128
# tile; TEMPORARY switch DOPPLER_MM_TILE=w64, K steps of 64, or w32, of 32) against the 32 × 64 blocks of 8
# subgroups (unset). First the attention kernels at 4ff4730 (not yet run on an H200) and the products' tests
# with each tile, then pp512 at depth 0 interleaved, then one profile each of Llama 8B.
set -uo pipefail
source bench/device-env.sh
echo "== kt attention"; timeout 200 $B/kt --test-threads=4 attention 2>&1 | grep -E "test result|panicked" | tail -3
for t in "" w64 w32; do
  echo "== km tile=$t"; DOPPLER_MM_TILE=$t timeout 150 $B/km --test-threads=2 half gated 2>&1 | grep -E "test result|panicked" | tail -3
done
echo "== hf"; timeout 150 $B/hf --test-threads=2 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.2-3b qwen2.5-1.5b qwen2.5-7b qwen3-4b llama3.1-8b gemma3-4b"
synth $SHAPES > /dev/null
echo "synth done after ${SECONDS}s"
pp() { # TILE SHAPE LABEL
  DOPPLER_MM_TILE=$1 timeout 90 $B/doppler bench --model $M/$2.gguf --runs 2 --depth 0 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $2 tile=${1:-base} pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do for s in $SHAPES; do for t in "" w64 w32; do pp "$t" $s $round; done; done; done
for t in "" w64 w32; do
  DOPPLER_MM_TILE=$t timeout 90 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 2 --depth 0 --gen-tokens 4 --profile > $OUT/profile-8b-${t:-base}.txt 2> $M/err || tail -2 $M/err
done
echo "done after ${SECONDS}s"
