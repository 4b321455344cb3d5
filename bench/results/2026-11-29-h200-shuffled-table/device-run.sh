#!/bin/bash
# One call (H200), carrying .gl and .device-carry (doppler, dm, km of d2280ce plus IQ4_XS's value table in registers,
# read with subgroupShuffle, and two temporary run-time switches, not committed: DOPPLER_NO_SHUFFLE, the shared
# 256-entry pair table as before; DOPPLER_SHUFFLE_ONE_ROW, one row a workgroup for IQ4_XS's 2048-4095-row matrices
# as the other types have, now that no table is filled per workgroup):
#   1. kernels_matmul's Q8 tests on this GPU (16 table lanes; lavapipe's subgroups of 8 take 8);
#   2. Llama 3.2 3B's decode products on an idle GPU (benches/decode_matvec.rs), Q4_K beside IQ4_XS;
#   3. tg128 of a `doppler synth --weights IQ4_XS` Llama 3.2 3B, the three variants interleaved, two rounds at
#      depth 0 and one at 4096.
set -uo pipefail
source bench/device-env.sh
( $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1 ) > $M/synth.log 2>&1 &
echo "== km q8"; timeout 150 $B/km q8 --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED|failures" | tail -5
matvec_micro "3b " shuffled
DOPPLER_NO_SHUFFLE=1 matvec_micro "iq4_xs q8" shared
DOPPLER_SHUFFLE_ONE_ROW=1 matvec_micro "iq4_xs q8" one-row
wait; cat $M/synth.log
echo "ready after ${SECONDS}s"
for round in r1 r2; do
  DOPPLER_NO_SHUFFLE=1 tg128 doppler l3b-iq4xs 0 shared-$round
  tg128 doppler l3b-iq4xs 0 shuffled-$round
  DOPPLER_SHUFFLE_ONE_ROW=1 tg128 doppler l3b-iq4xs 0 one-row-$round
done
DOPPLER_NO_SHUFFLE=1 tg128 doppler l3b-iq4xs 4096 shared
tg128 doppler l3b-iq4xs 4096 shuffled
DOPPLER_SHUFFLE_ONE_ROW=1 tg128 doppler l3b-iq4xs 4096 one-row
echo "done after ${SECONDS}s"
