#!/bin/bash
# Issue 17's done-when in one lease (H200): DOPPLER with the decode products, the residual norm and the decode
# attention taking their parameters as defines, and the residual norm's loads issued at once with subgroup
# reductions (`doppler`). Three calls on one warm machine, carrying .gl, .llama-carry and .device-carry
# (doppler, doppler-base = 6434a3e, doppler-prev = the build of ../2026-11-30-h200-norm-round-trips/, km, hf, kt):
#   1. `bash .llama-carry/build.sh; bash $0 prepare`: the GPU tests of this build (kernels_matmul,
#      hf_reference, kernels_transformer) while llama.cpp builds, bench/heldout.sh's F16 bases, the matrix's
#      synth files (bench/matrix.sh prepare), and while llama.cpp builds tg128 of this build against 6434a3e
#      on shapes the first call left out, and against doppler-prev (the attention's parameters still a
#      uniform; DOPPLER_NORM_WG=1024 gives it this build's norm shape).
#   2. `RUNS=2 COMPARE_SECONDS=360 bash bench/matrix.sh compare`: the matrix, $OUT/matrix.json.
#   3. `MIXES=... HELDOUT_SECONDS=330 bash bench/heldout.sh run`: $OUT/heldout.json.
set -uo pipefail
source bench/device-env.sh
lease_prepare
for f in /tmp/matrix/*.gguf; do ln -sf $f $M/; done
synth l3b-iq4xs
for depth in 0 4096; do
  for shape in l3b-iq4xs llama3.2-3b; do
    tg128 doppler-prev $shape $depth r1 DOPPLER_NORM_WG=1024; tg128 doppler $shape $depth r1
  done
  for shape in llama3.2-1b qwen3-4b phi3.5-mini llama3.1-8b 1b; do
    tg128 doppler-base $shape $depth r1; tg128 doppler $shape $depth r1
  done
done
echo "tg128 after ${SECONDS}s"
wait
cat /tmp/matrix-prepare.log
df -h /tmp | tail -1
