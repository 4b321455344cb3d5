#!/bin/bash
# The f16 weights sized for the stacked q, k, v and for gate and up together (one slice each; slices of
# larger matrices even), doppler, against d40cf7a, doppler-base: the products' tests, pp512 interleaved at
# depth 0 (and 4096 for Phi-3.5, whose q, k and v did not fit before), then profiles of the new build.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 250 $B/km --test-threads=2 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=2 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.2-3b qwen2.5-1.5b qwen2.5-7b qwen3-4b llama3.1-8b 4b phi3.5-mini 12b"
synth $SHAPES > /dev/null
echo "synth done after ${SECONDS}s"
pp() { # BINARY SHAPE DEPTH LABEL
  timeout 90 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1 pp512', round(r['pp_tokens_per_second']['mean']), 'gpu_mb', r.get('gpu_memory_mib', ''))"
}
for round in r1 r2; do for s in $SHAPES; do for b in doppler-base doppler; do pp $b $s 0 $round; done; done; done
for round in r1 r2; do for s in phi3.5-mini qwen2.5-7b; do for b in doppler-base doppler; do pp $b $s 4096 $round; done; done; done
for spec in "qwen3-4b 0" "phi3.5-mini 4096" "llama3.2-3b 0" "qwen2.5-7b 4096"; do
  set -- $spec
  timeout 120 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --profile > $OUT/profile-$1-d$2.txt 2> $M/err || tail -2 $M/err
done
echo "done after ${SECONDS}s"
