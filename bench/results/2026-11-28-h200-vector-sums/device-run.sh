#!/bin/bash
# The split-K sums four values a thread (sum_slices.wgsl VECTORS, doppler) against one (doppler-base, 81179d6):
# the product tests (split K, f16 halves) and the transformers fixtures, then pp512 at depth 0 where the
# products are most of the step, two interleaved rounds, and one `--profile` run each for the sums' rows.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 200 $B/km --test-threads=1 split half gated parts 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.2-3b qwen2.5-1.5b qwen2.5-7b"
synth $SHAPES > /dev/null
pp() { # BINARY SHAPE LABEL
  timeout 90 $B/$1 bench --model $M/$2.gguf --runs 2 --depth 0 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $2 d0 $1 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do for s in $SHAPES; do pp doppler-base $s $round; pp doppler $s $round; done; done
for s in $SHAPES; do
  for b in doppler-base doppler; do
    timeout 90 $B/$b bench --model $M/$s.gguf --runs 2 --depth 0 --gen-tokens 4 --profile > $M/p.txt 2> $M/err || tail -2 $M/err
    echo "profile $s $b $(grep -m1 '^pp512' $M/p.txt | cut -d' ' -f1-2) K-split sums µs $(sed -n '/µs\/prefill/,$p' $M/p.txt | awk '/\(K splits\)/ {s += $(NF-2)} END {print s}')"
  done
done
echo "done after ${SECONDS}s"
