#!/bin/bash
# Slabs of 32 for heads up to 128 with the register-held scalar passes (doppler) against main (doppler-base), and
# three ways of loading a tile (temporary switch EXP_FLASH): two 8-byte f16 loads a piece (default), one
# mat2x4<f16> (FETCH_MAT), or main's 16-byte u32 load converted to f16 through f32 (FETCH_U32). Attention tests
# and transformers fixtures first, then `doppler bench --profile` pp512 (tokens/s) and the attention row (µs a step).
set -uo pipefail
source bench/device-env.sh
for v in "" FETCH_MAT FETCH_U32; do
  echo "== kt $v"; EXP_FLASH=$v timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
done
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
SHAPES="llama3.2-1b llama3.2-3b qwen2.5-1.5b llama3.1-8b qwen3-4b phi3.5-mini 4b"
synth $SHAPES > /dev/null
run() { # BINARY SHAPE DEPTH LABEL
  timeout 100 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 512 --gen-tokens 4 --profile \
    > $M/p.txt 2> $M/err || tail -2 $M/err
  echo "$4 $2 d$3 $1 ${EXP_FLASH:-} pp512 $(grep -m1 '^pp512' $M/p.txt | cut -d' ' -f2) attention $(awk '$1=="attention" && NF==5 {print $3}' $M/p.txt | tail -1)"
}
for shape in $SHAPES; do
  for round in r1 r2; do
    run doppler-base $shape 4096 $round
    for v in "" FETCH_MAT FETCH_U32; do export EXP_FLASH=$v; run doppler $shape 4096 $round; done; unset EXP_FLASH
  done
  run doppler-base $shape 0 r1
  for v in "" FETCH_MAT; do export EXP_FLASH=$v; run doppler $shape 0 r1; done; unset EXP_FLASH
done
echo "done after ${SECONDS}s"
