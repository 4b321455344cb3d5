#!/bin/bash
# Second call (H200), carrying .gl and .device-carry: 564cc59 (no row loop) with temporary run-time switches (not
# committed): DOPPLER_IQ4_PAIRS=1 as in device-variants.sh; DOPPLER_IQ4_NOLOOKUP=1 takes IQ4_XS's nibbles as the
# quants themselves (wrong values: what the products cost without the table lookups); DOPPLER_MV_EXACT_THREADS=1
# gives rows of at most 128 parts one thread a part in whole subgroups (96 for Llama 3.2 3B's 3,072-wide rows,
# where 128 leaves 32 idle).
set -uo pipefail
source bench/device-env.sh
( $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; synth llama3.2-3b llama3.2-1b qwen3-4b 4b ) > $M/synth.log 2>&1 &
echo "== km with IQ4_XS pairs"
DOPPLER_IQ4_PAIRS=1 timeout 150 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
micro() { matvec_micro "3b " "$1"; }  # the Llama 3.2 3B products

for round in r1 r2; do
  micro "$round base"
  DOPPLER_IQ4_PAIRS=1 micro "$round pairs"
  DOPPLER_IQ4_PAIRS=1 DOPPLER_IQ4_NOLOOKUP=1 micro "$round pairs-nolookup"
  DOPPLER_MV_EXACT_THREADS=1 micro "$round exact"
done
echo "micro after ${SECONDS}s"
wait; cat $M/synth.log
for round in r1 r2; do
  tg128 doppler l3b-iq4xs 0 "$round base"
  DOPPLER_IQ4_PAIRS=1 tg128 doppler l3b-iq4xs 0 "$round pairs"
  DOPPLER_IQ4_PAIRS=1 DOPPLER_MV_EXACT_THREADS=1 tg128 doppler l3b-iq4xs 0 "$round pairs-exact"
  DOPPLER_IQ4_PAIRS=1 DOPPLER_IQ4_NOLOOKUP=1 tg128 doppler l3b-iq4xs 0 "$round pairs-nolookup"
  for shape in llama3.2-3b qwen3-4b llama3.2-1b 4b; do
    tg128 doppler $shape 0 "$round base"
    DOPPLER_MV_EXACT_THREADS=1 tg128 doppler $shape 0 "$round exact"
  done
done
tg128 doppler l3b-iq4xs 4096 "r1 base"; DOPPLER_IQ4_PAIRS=1 tg128 doppler l3b-iq4xs 4096 "r1 pairs"
for shape in llama3.2-3b qwen3-4b; do tg128 doppler $shape 4096 "r1 base"; DOPPLER_MV_EXACT_THREADS=1 tg128 doppler $shape 4096 "r1 exact"; done
echo "done after ${SECONDS}s"
