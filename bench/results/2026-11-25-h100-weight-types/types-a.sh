#!/bin/bash
# Call A: start llama.cpp's builds, write one-type synthetic models, profile a Q4_K_M prefill.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
bash .llama-carry/build.sh
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /work && ln -sfn "$PWD" /work/main
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; mkdir -p $M
synth() { $B/doppler synth --arch llama --size $1 --weights $2 --out $M/$1-$2.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; }
for w in Q4_K_M Q8_0 Q2_K Q3_K IQ4_NL IQ4_XS MXFP4; do synth llama3.2-1b $w; done
for w in Q4_K_M IQ4_XS Q3_K Q8_0; do synth llama3.1-8b $w; done
df -h /tmp | tail -1
for m in llama3.2-1b llama3.1-8b; do
  echo "== prefill+decode profile $m Q4_K_M"
  $B/doppler bench --model $M/$m-Q4_K_M.gguf --runs 1 --gen-tokens 32 --profile 2>&1 | tail -60
done > $OUT/profile.txt
tail -5 $OUT/profile.txt
ls /tmp/l/; echo "call A after ${SECONDS}s"
