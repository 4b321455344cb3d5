#!/bin/bash
# q, k and v in one f16 product (matmul_half.wgsl STACKED) against one product each (the TEMPORARY switch
# DOPPLER_UNSTACKED=1 of the same binary): the products' tests, perplexity of both over the same text, pp512 at
# depth 0 and 4096 interleaved, and a profile of Llama 1B and Qwen2.5 1.5B with each.
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 200 $B/km --test-threads=2 stack half gated 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=2 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.2-3b qwen2.5-1.5b qwen2.5-7b qwen3-4b llama3.1-8b 4b phi3.5-mini 12b"
synth $SHAPES > /dev/null
echo "synth done after ${SECONDS}s"
cat README.md crates/engine/src/model/forward.rs > $M/text.txt
for m in llama3.2-1b qwen2.5-7b; do
  for v in stacked unstacked; do
    [ $v = unstacked ] && export DOPPLER_UNSTACKED=1 || unset DOPPLER_UNSTACKED
    timeout 100 $B/doppler perplexity --model $M/$m.gguf --ctx 512 --file $M/text.txt 2>&1 | grep -E "PPL|rror" | tail -1 | sed "s/^/$m $v /"
  done
done
pp() { # VARIANT SHAPE DEPTH LABEL
  [ $1 = unstacked ] && export DOPPLER_UNSTACKED=1 || unset DOPPLER_UNSTACKED
  timeout 90 $B/doppler bench --model $M/$2.gguf --runs 2 --depth $3 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for d in 0 4096; do for round in r1 r2; do for s in $SHAPES; do for v in unstacked stacked; do pp $v $s $d $round; done; done; done; done
for s in llama3.2-1b qwen2.5-1.5b; do for v in unstacked stacked; do
  [ $v = unstacked ] && export DOPPLER_UNSTACKED=1 || unset DOPPLER_UNSTACKED
  timeout 90 $B/doppler bench --model $M/$s.gguf --runs 2 --depth 0 --gen-tokens 4 --profile > $OUT/profile-$s-$v.txt 2> $M/err || tail -2 $M/err
done; done
echo "done after ${SECONDS}s"
