#!/bin/bash
# As device-run5.sh with 8 streams per packed workgroup (was 128 threads: 16 streams at heads of 64) and
# the streams merged by all threads at once; the packed shapes only, two rounds.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== kernels_transformer"; timeout 150 $B/kt --test-threads=1 > $OUT/kt.txt 2>&1; grep -E "^test |test result" $OUT/kt.txt; grep -A4 panicked $OUT/kt.txt | cut -c1-600
for spec in "llama llama3.1-8b llama3" "llama llama3.2-1b llama3" "qwen2 qwen2.5-7b qwen2" "qwen2 qwen2.5-1.5b qwen2" "qwen3 qwen3-4b qwen3"; do
  set -- $spec
  [ -e $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
echo "synth done after ${SECONDS}s"
for round in 1 2; do
for depth in 0 4096; do
  for m in llama3.1-8b llama3.2-1b qwen2.5-7b qwen2.5-1.5b qwen3-4b; do
    for bin in doppler-base doppler; do
      timeout 60 $B/$bin bench --model $M/$m.gguf --runs 2 --depth $depth --prompt-tokens 64 --gen-tokens 128 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('round $round $m d$depth $bin tg128', round(r['tg_tokens_per_second']['mean'],1))"
    done
  done
done
echo "round $round done after ${SECONDS}s"
done
