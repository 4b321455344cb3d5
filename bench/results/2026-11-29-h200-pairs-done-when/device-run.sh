#!/bin/bash
# Issue 17's done-when in one lease (H200), DOPPLER at 3131bfe (IQ4_XS's wide decode parts on 8-byte pair reads,
# 96 threads for rows of 65-96 decode parts). Three calls on one warm machine, carrying .gl, .llama-carry and
# .device-carry (doppler, km, hf, kt, dm):
#   1. `bash .llama-carry/build.sh; bash $0 prepare`: the GPU tests of this build (kernels_matmul,
#      hf_reference, kernels_transformer) while llama.cpp builds, bench/heldout.sh's F16 bases, the matrix's
#      synth files (bench/matrix.sh prepare), and while the builds finish, decode profiles of Llama 3.2 3B
#      (Q4_K_M, and every layer matrix IQ4_XS) and the decode products on their own (benches/decode_matvec.rs).
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
$B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
  --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
while kill -0 $matrix 2>/dev/null && ! grep -q "llama3.2-3b.gguf" /tmp/matrix-prepare.log; do sleep 3; done
echo "synth done after ${SECONDS}s"
for model in /tmp/matrix/llama3.2-3b.gguf $M/l3b-iq4xs.gguf; do
  timeout 60 $B/doppler bench --model $model --runs 1 --prompt-tokens 64 --gen-tokens 64 --profile \
    > $OUT/profile-$(basename $model .gguf).txt 2>&1
done
matvec_micro "" all > $OUT/decode-matvec.txt
echo "profiles after ${SECONDS}s"
wait
cat /tmp/matrix-prepare.log
df -h /tmp | tail -1
