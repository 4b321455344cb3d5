#!/bin/bash
# Decode attention packs for groups of fewer than four query heads per kv head: `packs_pay`'s least group
# behind a temporary switch (EXP_PACK_MIN; 4 as committed, 3 packs Llama 3B's three heads, 99 never packs).
# tg128 after a 64-token prompt (`tg128` of device-env.sh), two interleaved rounds at depths 0 and 4096.
set -uo pipefail
source bench/device-env.sh
synth llama3.2-3b qwen3-4b
run() { EXP_PACK_MIN=$4 tg128 doppler $1 $2 "$3 EXP_PACK_MIN=$4"; }
for round in r1 r2; do
  for depth in 0 4096; do
    run llama3.2-3b $depth $round 4; run llama3.2-3b $depth $round 3
    run qwen3-4b $depth $round 4; run qwen3-4b $depth $round 99
  done
done
echo "done after ${SECONDS}s"
