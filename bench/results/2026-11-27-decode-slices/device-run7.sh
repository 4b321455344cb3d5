#!/bin/bash
# As device-run6.sh with the q/k norms of all staged rows reduced in one tree (was a tree per row): the
# GPU attention tests, the transformers fixtures, and tg128 of the shapes with q/k norms.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== kernels_transformer"; timeout 150 $B/kt --test-threads=1 > $OUT/kt.txt 2>&1; grep -E "test result" $OUT/kt.txt; grep -A4 panicked $OUT/kt.txt | cut -c1-600
echo "== hf_reference"; timeout 120 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
for spec in "qwen3 qwen3-4b qwen3" "gemma3 270m gemma3" "gemma3 4b gemma3"; do
  set -- $spec
  [ -e $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for depth in 0 4096; do
  for m in qwen3-4b 270m 4b; do
    for bin in doppler-base doppler; do
      timeout 60 $B/$bin bench --model $M/$m.gguf --runs 2 --depth $depth --prompt-tokens 64 --gen-tokens 128 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$m d$depth $bin tg128', round(r['tg_tokens_per_second']['mean'],1))"
    done
  done
done
echo "done after ${SECONDS}s"
