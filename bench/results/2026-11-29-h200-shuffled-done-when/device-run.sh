#!/bin/bash
# Issue 17's done-when in one lease (H200): DOPPLER at d2280ce plus IQ4_XS's value table in registers (read with
# subgroupShuffle in the decode products on a Q8 input) and a temporary switch DOPPLER_TARGET_WG=N (not
# committed; 128 is the build's own): the workgroups a wave that the f16 prefill products' K splits aim for
# (k_splits), 132 being the H200's SMs. Three calls on one warm machine, carrying .gl, .llama-carry and
# .device-carry (doppler, km, hf, kt):
#   1. `bash .llama-carry/build.sh; bash $0 prepare`: the GPU tests of this build (kernels_matmul,
#      hf_reference, kernels_transformer) while llama.cpp builds, bench/heldout.sh's F16 bases, the matrix's
#      synth files (bench/matrix.sh prepare), and while the builds finish DOPPLER_TARGET_WG 128 against 132.
#   2. `RUNS=2 COMPARE_SECONDS=400 bash bench/matrix.sh compare`: the matrix, $OUT/matrix.json.
#   3. `MIXES=... bash bench/heldout.sh run`: $OUT/heldout.json.
set -uo pipefail
source bench/device-env.sh
df -h /tmp | tail -1
bash bench/matrix.sh prepare > /tmp/matrix-prepare.log 2>&1 &
matrix=$!
for t in km hf kt; do
  echo "== $t"; timeout 150 $B/$t --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
done
echo "tests done after ${SECONDS}s"
bash bench/heldout.sh bases
while kill -0 $matrix 2>/dev/null && ! grep -q "phi3.5-mini.gguf" /tmp/matrix-prepare.log; do sleep 3; done
echo "synth done after ${SECONDS}s"
pp() {  # pp SHAPE DEPTH TARGET ROUND
  DOPPLER_TARGET_WG=$3 timeout 90 $B/doppler bench --model /tmp/matrix/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $1 d$2 target_wg=$3 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do for shape in qwen2.5-7b qwen3-4b llama3.2-3b; do pp $shape 4096 128 $round; pp $shape 4096 132 $round; done; done
for shape in llama3.1-8b phi3.5-mini 4b qwen2.5-1.5b; do pp $shape 4096 128 r1; pp $shape 4096 132 r1; done
echo "target workgroups after ${SECONDS}s"
wait
cat /tmp/matrix-prepare.log
df -h /tmp | tail -1
