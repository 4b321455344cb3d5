#!/bin/bash
# Products that would split K in 128-row tiles take 64-row tiles of 4 subgroups instead (twice the workgroups),
# against splitting K (the TEMPORARY switch DOPPLER_NO_NARROW=1 of the same binary); q, k and v one product
# (committed before). The products' tests, perplexity of both, pp512 at depth 0 interleaved, profiles.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 250 $B/km --test-threads=2 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=2 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.2-3b qwen2.5-1.5b qwen2.5-7b qwen3-4b 4b llama3.1-8b"
synth $SHAPES > /dev/null
echo "synth done after ${SECONDS}s"
cat README.md crates/engine/src/model/forward.rs > $M/text.txt
for v in narrow split; do
  [ $v = split ] && export DOPPLER_NO_NARROW=1 || unset DOPPLER_NO_NARROW
  timeout 100 $B/doppler perplexity --model $M/llama3.2-1b.gguf --ctx 512 --file $M/text.txt 2>&1 | grep -E "PPL|rror" | tail -1 | sed "s/^/llama3.2-1b $v /"
done
pp() { # VARIANT SHAPE DEPTH LABEL
  [ $1 = split ] && export DOPPLER_NO_NARROW=1 || unset DOPPLER_NO_NARROW
  timeout 90 $B/doppler bench --model $M/$2.gguf --runs 2 --depth $3 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2 r3; do for s in $SHAPES; do for v in split narrow; do pp $v $s 0 $round; done; done; done
for s in llama3.2-1b qwen2.5-1.5b llama3.2-3b; do for v in split narrow; do
  [ $v = split ] && export DOPPLER_NO_NARROW=1 || unset DOPPLER_NO_NARROW
  timeout 90 $B/doppler bench --model $M/$s.gguf --runs 2 --depth 0 --gen-tokens 4 --profile > $OUT/profile-$s-$v.txt 2> $M/err || tail -2 $M/err
done; done
echo "done after ${SECONDS}s"
