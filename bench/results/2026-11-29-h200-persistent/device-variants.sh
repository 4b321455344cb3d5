#!/bin/bash
# One call (H200), carrying .gl and .device-carry: doppler, km, kt, dm (benches/decode_matvec) = 564cc59 with the
# decode product looping over row groups (matmul_vector.wgsl: a workgroup takes rows first_row, first_row +
# workgroups·ROWS, ... so it fills its value table and normalizes its input once for all of them) and temporary
# run-time switches (not committed):
#   DOPPLER_MV_CAP=N: at most about N workgroups a product (rounds balanced), for the table types only unless
#     DOPPLER_MV_CAP_ALL=1;
#   DOPPLER_IQ4_PAIRS=1: IQ4_XS's wide parts read their 16 quant bytes as two 8-byte loads (blocks are 8-aligned)
#     and the block head as one, instead of two 16-byte loads and word selects;
#   DOPPLER_MV_TABLE_ROWS=N: rows a workgroup of the table types at 2048-4095 rows (now 2).
set -uo pipefail
source bench/device-env.sh
( $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; synth llama3.2-3b llama3.2-1b qwen3-4b ) > $M/synth.log 2>&1 &
echo "== km, kt with every product capped at 3 workgroups and IQ4_XS pairs"
DOPPLER_MV_CAP=3 DOPPLER_MV_CAP_ALL=1 DOPPLER_IQ4_PAIRS=1 timeout 150 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
DOPPLER_MV_CAP=3 DOPPLER_MV_CAP_ALL=1 DOPPLER_IQ4_PAIRS=1 timeout 150 $B/kt --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
echo "tests after ${SECONDS}s"
micro() { matvec_micro "3b " "$1"; }  # the Llama 3.2 3B products

for round in r1 r2; do
  micro "$round base"
  DOPPLER_IQ4_PAIRS=1 micro "$round pairs"
  DOPPLER_MV_CAP=1056 DOPPLER_MV_CAP_ALL=1 micro "$round cap1056"
  DOPPLER_MV_CAP=528 DOPPLER_MV_CAP_ALL=1 micro "$round cap528"
  DOPPLER_MV_CAP=264 DOPPLER_MV_CAP_ALL=1 micro "$round cap264"
  DOPPLER_MV_TABLE_ROWS=4 micro "$round rows4"
  DOPPLER_MV_TABLE_ROWS=1 DOPPLER_MV_CAP=528 micro "$round rows1-cap528"
done
echo "micro after ${SECONDS}s"
wait; cat $M/synth.log
for round in r1 r2; do
  for shape in l3b-iq4xs llama3.2-3b llama3.2-1b qwen3-4b; do
    tg128 doppler $shape 0 "$round base"
    DOPPLER_IQ4_PAIRS=1 tg128 doppler $shape 0 "$round pairs"
    DOPPLER_MV_CAP=1056 DOPPLER_MV_CAP_ALL=1 tg128 doppler $shape 0 "$round cap1056"
    DOPPLER_MV_CAP=528 DOPPLER_MV_CAP_ALL=1 tg128 doppler $shape 0 "$round cap528"
    DOPPLER_MV_CAP=264 DOPPLER_MV_CAP_ALL=1 tg128 doppler $shape 0 "$round cap264"
  done
  DOPPLER_MV_TABLE_ROWS=4 tg128 doppler l3b-iq4xs 0 "$round rows4"
  DOPPLER_MV_TABLE_ROWS=1 DOPPLER_MV_CAP=528 tg128 doppler l3b-iq4xs 0 "$round rows1-cap528"
  DOPPLER_IQ4_PAIRS=1 DOPPLER_MV_CAP=528 tg128 doppler l3b-iq4xs 0 "$round pairs-cap528"
done
echo "done after ${SECONDS}s"
