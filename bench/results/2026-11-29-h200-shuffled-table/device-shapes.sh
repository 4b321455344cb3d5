#!/bin/bash
# One call (H200), carrying .gl and .device-carry (doppler, dm: the shuffled table of device-run.sh plus temporary
# switches DOPPLER_IQ_THREADS / DOPPLER_IQ_ROWS, the threads and rows a workgroup of IQ4_XS's decode products, not
# committed): Llama 3.2 3B's IQ4_XS products on an idle GPU in each shape, then tg128 of the shapes that might pay.
set -uo pipefail
source bench/device-env.sh
( $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1 ) > $M/synth.log 2>&1 &
matvec_micro "3b " default
for threads in 32 64 128; do for rows in 1 2 4; do
  DOPPLER_IQ_THREADS=$threads DOPPLER_IQ_ROWS=$rows matvec_micro "iq4_xs q8" "t$threads-r$rows"
done; done
wait; cat $M/synth.log
for round in r1 r2; do
  tg128 doppler l3b-iq4xs 0 default-$round
  DOPPLER_IQ_THREADS=32 tg128 doppler l3b-iq4xs 0 t32-$round
  DOPPLER_IQ_THREADS=64 tg128 doppler l3b-iq4xs 0 t64-$round
  DOPPLER_IQ_ROWS=4 tg128 doppler l3b-iq4xs 0 r4-$round
done
echo "done after ${SECONDS}s"
