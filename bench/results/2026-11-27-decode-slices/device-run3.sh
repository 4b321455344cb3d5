#!/bin/bash
# Packed decode slices (a thread per 16-byte chunk of a key row holding four query heads in vec4 and
# mat4x4 columns, no per-thread arrays): doppler, and doppler-unchecked (the same without naga's index
# clamping) against doppler-base; GPU attention tests and transformers fixtures first, tg128 at depth 0
# and 4096, profiles of the Llama 8B and Gemma 270M decode steps at depth 4096.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== kernels_transformer"; timeout 150 $B/kt --test-threads=1 2>&1 | grep -E "^test |test result|panicked" | tail -14
echo "== hf_reference"; timeout 120 $B/hf --test-threads=1 2>&1 | grep -E "^test |test result|panicked" | tail -9
for spec in "llama llama3.1-8b llama3" "llama llama3.2-1b llama3" "qwen2 qwen2.5-7b qwen2" "gemma3 270m gemma3" "gemma3 4b gemma3" "phi3 phi3.5-mini phi3"; do
  set -- $spec
  [ -e $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
echo "synth done after ${SECONDS}s"
for depth in 4096 0; do
  for m in llama3.1-8b llama3.2-1b qwen2.5-7b 270m 4b phi3.5-mini; do
    for bin in doppler-base doppler doppler-unchecked; do
      timeout 60 $B/$bin bench --model $M/$m.gguf --runs 2 --depth $depth --prompt-tokens 64 --gen-tokens 128 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$m d$depth $bin tg128', round(r['tg_tokens_per_second']['mean'],1))"
    done
  done
  echo "depth $depth done after ${SECONDS}s"
done
for m in llama3.1-8b 270m; do
  timeout 60 $B/doppler bench --model $M/$m.gguf --runs 1 --depth 4096 --prompt-tokens 64 --gen-tokens 32 --profile --json > $OUT/profile-$m-d4096.json 2>$M/err || tail -3 $M/err
  python3 -c "
import json;r=json.load(open('$OUT/profile-$m-d4096.json'))
for k in r['kernels_per_token'][:9]: print('$m', k['kernel'], k['microseconds_per_token'])"
done
echo "done after ${SECONDS}s"
