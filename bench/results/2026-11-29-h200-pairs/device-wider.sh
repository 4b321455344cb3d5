#!/bin/bash
# Third call (H200): the other direction from device-shapes.sh, whose fewer threads and more rows a workgroup
# were slower: DOPPLER_MV_T256=N gives 256 threads to rows of at least N parts (else at most 128), and
# DOPPLER_MV_ROWS2048=1 one row a workgroup for matrices of 2048-4095 rows (twice the workgroups).
set -uo pipefail
source bench/device-env.sh
synth qwen3-4b llama3.2-3b llama3.2-1b
[ -e $M/l3b-iq4xs.gguf ] || $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
echo "ready after ${SECONDS}s"
variant() {  # variant NAME T256 ROWS2048 SHAPE ROUND
  DOPPLER_MV_T256=$2 DOPPLER_MV_ROWS2048=$3 tg128 doppler $4 0 "$5 $1"
}
for round in r1 r2; do
  for shape in qwen3-4b llama3.2-3b llama3.2-1b l3b-iq4xs; do
    variant base 100000 2 $shape $round; variant t256-129 129 2 $shape $round
    variant t256-257 257 2 $shape $round; variant rows1 100000 1 $shape $round
  done
done
echo "done after ${SECONDS}s"
