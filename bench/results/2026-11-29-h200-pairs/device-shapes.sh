#!/bin/bash
# Second call (H200), carrying .gl and .device-carry: doppler = a560c67 plus temporary run-time switches of the
# decode products' workgroup shape (matmul.rs matvec_shape; not committed):
#   DOPPLER_MV_ROWS2048=4: four rows a workgroup for matrices of 2048-4095 rows (else two);
#   DOPPLER_MV_MIN_UNITS=2: threads chosen for at least two parts a thread (else one).
# tg128 at depth 0, two interleaved rounds, on the decode rows with the slowest products by the profiles
# (ffn_down and attn_output of 2560-3072 rows at 540-750 GB/s where gate+up reach 1300).
set -uo pipefail
source bench/device-env.sh
( $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1 ) > $M/synth-iq.log 2>&1 &
synth qwen3-4b llama3.2-3b llama3.2-1b gemma3-4b
wait; cat $M/synth-iq.log
echo "ready after ${SECONDS}s"
variant() {  # variant NAME ROWS2048 MIN_UNITS SHAPE ROUND
  DOPPLER_MV_ROWS2048=$2 DOPPLER_MV_MIN_UNITS=$3 tg128 doppler $4 0 "$5 $1"
}
for round in r1 r2; do
  for shape in qwen3-4b llama3.2-3b llama3.2-1b l3b-iq4xs gemma3-4b; do
    variant base 2 1 $shape $round; variant rows4 4 1 $shape $round
    variant units2 2 2 $shape $round; variant rows4-units2 4 2 $shape $round
  done
done
echo "done after ${SECONDS}s"
