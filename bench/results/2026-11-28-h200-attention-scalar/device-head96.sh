#!/bin/bash
# Heads of 96 (Phi-3.5) keep their six query fragments in registers and take 64-key tiles (doppler) against
# the staged query tile with 32-key tiles (doppler-base, 30d06fd): the attention tests and the transformers
# fixtures, then `doppler bench --profile` pp512 and the attention row (µs a step), two rounds at depth 4096.
set -uo pipefail
source bench/device-env.sh
echo "== kt"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
synth phi3.5-mini > /dev/null
run() { # BINARY SHAPE DEPTH LABEL
  timeout 100 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 512 --gen-tokens 4 --profile \
    > $M/p.txt 2> $M/err || tail -2 $M/err
  echo "$4 $2 d$3 $1 pp512 $(grep -m1 '^pp512' $M/p.txt | cut -d' ' -f2) attention $(awk '$1=="attention" && NF==5 {print $3}' $M/p.txt | tail -1)"
}
for round in r1 r2; do run doppler-base phi3.5-mini 4096 $round; run doppler phi3.5-mini 4096 $round; done
run doppler-base phi3.5-mini 0 r1; run doppler phi3.5-mini 0 r1
for depth in 0 4096; do
  timeout 100 $B/doppler bench --model $M/phi3.5-mini.gguf --runs 2 --depth $depth --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('matrix phi3.5-mini d$depth pp512', round(r['pp_tokens_per_second']['mean']), 'tg128', round(r['tg_tokens_per_second']['mean'],1))"
done
echo "done after ${SECONDS}s"
