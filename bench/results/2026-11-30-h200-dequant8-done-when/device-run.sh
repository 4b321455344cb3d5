#!/bin/bash
# Issue 17's done-when in one lease (H200): DOPPLER whose conversion of quantized weights to f16 decodes a
# K-quant sub-block's scale once for its 8 values and takes the matrix's row length and row bytes as defines
# (`doppler`). Three calls on one warm machine, carrying .gl, .llama-carry and .device-carry (doppler,
# doppler-dq8 = the scale change alone, doppler-base = 5cc4920, km, hf, kt):
#   1. `bash .llama-carry/build.sh; bash $0`: the GPU tests of this build while llama.cpp builds, the held-out
#      F16 bases, the matrix's synth files, and while llama.cpp builds pp512 of the three builds, interleaved.
#   2. `RUNS=2 COMPARE_SECONDS=360 bash bench/matrix.sh compare`: the matrix, $OUT/matrix.json.
#   3. `MIXES=... HELDOUT_SECONDS=330 bash bench/heldout.sh run`: $OUT/heldout.json.
set -uo pipefail
source bench/device-env.sh
lease_prepare
for round in r1 r2; do
  for row in "qwen2.5-7b 4096" "llama3.2-3b 4096" "llama3.2-3b 0" "llama3.1-8b 0"; do
    set -- $row
    for bin in doppler-base doppler-dq8 doppler; do pp512 $bin $1 $2 $round; done
  done
done
echo "pp512 after ${SECONDS}s"
lease_finish
