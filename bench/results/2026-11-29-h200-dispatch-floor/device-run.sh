#!/bin/bash
# One call (H200), carrying .gl and .device-carry (doppler, dm of 3131bfe), on an idle GPU: what a chained decode
# dispatch costs by itself (benches/decode_matvec.rs `tiny`, three chain lengths), and where Qwen2.5 7B's prefill
# at depth 4096 goes (`doppler bench --profile`), the matrix row with the thinnest prefill margin.
set -uo pipefail
source bench/device-env.sh
synth qwen2.5-7b > $M/synth.log 2>&1 &
for chain in 50 200 800; do
  timeout 60 $B/dm --filter tiny --chain $chain --repeats 7 2>/dev/null | grep '^{' | sed "s/^/chain $chain /"
done
matvec_micro "3b " idle
wait; cat $M/synth.log
timeout 120 $B/doppler bench --model $M/qwen2.5-7b.gguf --runs 1 --depth 4096 --gen-tokens 4 --profile > $OUT/profile-qwen2.5-7b-d4096.txt 2>&1
head -30 $OUT/profile-qwen2.5-7b-d4096.txt
echo "done after ${SECONDS}s"
