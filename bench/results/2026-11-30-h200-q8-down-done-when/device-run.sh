#!/bin/bash
# Issue 17's done-when in one lease (H200): DOPPLER whose decode quantizes the feed-forward's gated output for
# ffn_down from 4 MiB of weights (`doppler`). Three calls on one warm machine, carrying .gl, .llama-carry and
# .device-carry (doppler, doppler-base = d8ca779, km, hf, kt):
#   1. `bash .llama-carry/build.sh; bash $0 prepare`: the GPU tests of this build (kernels_matmul,
#      hf_reference, kernels_transformer) while llama.cpp builds, bench/heldout.sh's F16 bases, the matrix's
#      synth files (bench/matrix.sh prepare), and while llama.cpp builds tg128 of this build against d8ca779 on
#      the shapes ../2026-11-30-h200-q8-down-input/ left out.
#   2. `RUNS=2 COMPARE_SECONDS=360 bash bench/matrix.sh compare`: the matrix, $OUT/matrix.json.
#   3. `MIXES=... HELDOUT_SECONDS=330 bash bench/heldout.sh run`: $OUT/heldout.json.
set -uo pipefail
source bench/device-env.sh
lease_prepare
for depth in 0 4096; do
  for shape in 270m 4b phi3.5-mini qwen2.5-1.5b qwen2.5-7b; do
    tg128 doppler-base $shape $depth r1; tg128 doppler $shape $depth r1
  done
done
echo "tg128 after ${SECONDS}s"
lease_finish
