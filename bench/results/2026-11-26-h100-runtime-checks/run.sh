#!/bin/bash
# Carry .gl and .device-carry/doppler.tar.xz holding doppler (this change), doppler-base (1494c05) and the
# engine's GPU test binaries. Tests first, then base and new interleaved on synthetic models.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
# The test binaries find tests/data through the path they were built in.
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
for t in kernels_matmul kernels_transformer kernels_sampling hf_reference; do
  echo "== $t"; timeout 150 $B/$t 2>&1 | grep -E "^test result|FAILED|panicked" | head -5
done
for s in "llama llama3.2-1b llama3" "llama llama3.1-8b llama3" "gemma3 4b gemma3" "qwen2 qwen2.5-7b qwen2"; do set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for m in llama3.2-1b llama3.1-8b 4b qwen2.5-7b; do for round in 1 2; do for bin in doppler-base doppler; do
  timeout 90 $B/$bin bench --model $M/$m.gguf --runs 3 --json > $OUT/$m-$bin-$round.json 2>/dev/null
  python3 -c "import json;r=json.load(open('$OUT/$m-$bin-$round.json'));print('$m $bin r$round pp', round(r['pp_tokens_per_second']['mean']), 'tg', round(r['tg_tokens_per_second']['mean'],1))"
done; done; done
echo "done after ${SECONDS}s"
