#!/bin/bash
# The scalar passes kept to one row a thread in registers, four keys at a time, whole tiles unmasked, and the
# tiles staged as f16 without conversions (doppler) against main (doppler-base), with and without slabs of 32
# dimensions (EXP_SLAB=32, a temporary switch): the attention tests (f64 reference) and the transformers
# fixtures first, then `doppler bench --profile` pp512 (tokens/s) and the attention row (µs a step).
set -uo pipefail
source bench/device-env.sh
echo "== kt"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
echo "== kt slab32"; EXP_SLAB=32 timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.1-8b qwen3-4b phi3.5-mini 4b"
synth $SHAPES > /dev/null
run() { # BINARY SHAPE DEPTH LABEL
  timeout 100 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 512 --gen-tokens 4 --profile \
    > $M/p.txt 2> $M/err || tail -2 $M/err
  echo "$4 $2 d$3 $1${EXP_SLAB:+-slab32} pp512 $(grep -m1 '^pp512' $M/p.txt | cut -d' ' -f2) attention $(awk '$1=="attention" && NF==5 {print $3}' $M/p.txt | tail -1)"
}
for shape in $SHAPES; do
  for round in r1 r2; do
    unset EXP_SLAB; run doppler-base $shape 4096 $round; run doppler $shape 4096 $round
    export EXP_SLAB=32; run doppler $shape 4096 $round; unset EXP_SLAB
  done
  run doppler-base $shape 0 r1; run doppler $shape 0 r1; EXP_SLAB=32 run doppler $shape 0 r1
done
echo "done after ${SECONDS}s"
