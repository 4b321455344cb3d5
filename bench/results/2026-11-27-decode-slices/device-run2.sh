#!/bin/bash
# doppler-unchecked: the slices kernel without naga's index clamping (is it the per-thread arrays?).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
for spec in "llama llama3.1-8b llama3" "gemma3 270m gemma3"; do
  set -- $spec
  [ -e $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for depth in 0 4096; do
  for m in llama3.1-8b 270m; do
    for bin in doppler-base doppler doppler-unchecked; do
      timeout 60 $B/$bin bench --model $M/$m.gguf --runs 2 --depth $depth --prompt-tokens 64 --gen-tokens 128 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$m d$depth $bin tg128', round(r['tg_tokens_per_second']['mean'],1))"
    done
  done
done
timeout 60 $B/doppler-unchecked bench --model $M/llama3.1-8b.gguf --runs 1 --depth 4096 --prompt-tokens 64 --gen-tokens 32 --profile --json > $OUT/profile-unchecked-8b-d4096.json 2>$M/err || tail -3 $M/err
python3 -c "
import json;r=json.load(open('$OUT/profile-unchecked-8b-d4096.json'))
for k in r['kernels_per_token'][:8]: print(k['kernel'], k['microseconds_per_token'])"
echo "done after ${SECONDS}s"
