#!/bin/bash
# While bench/matrix.sh prepare builds llama.cpp (run beside it): the kernel tests, and where the
# f16 product pays off: prompts of 64 to 512 tokens with it and with the tiled kernel alone
# (DOPPLER_AB_TILED, a temporary switch of the measuring binary).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
echo "== kernel tests"; timeout 300 $B/kernels_matmul --test-threads=1 2>&1 | grep -E "^test |result|f16 matmul|failures" | tail -40
for spec in "llama llama3.2-1b llama3" "llama llama3.1-8b llama3" "gemma3 4b gemma3"; do
  set -- $spec
  [ -f $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for m in llama3.2-1b llama3.1-8b 4b; do
  for tokens in 64 128 192 256 512; do
    for variant in tiled half; do
      if [ $variant = tiled ]; then export DOPPLER_AB_TILED=1; else unset DOPPLER_AB_TILED; fi
      timeout 60 $B/doppler bench --model $M/$m.gguf --runs 3 --prompt-tokens $tokens --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$m pp$tokens $variant', round(r['pp_tokens_per_second']['mean']), 'ttft', round(r['ttft_ms']['mean'],1))"
    done
  done
done
echo "done after ${SECONDS}s"
