#!/bin/bash
# Where the f16 products pay off by model size: pp512 at depth 0 with them (doppler, 5b61e51's source) and with
# the tiled kernel alone (doppler-tiled: the same source with matmul_half::MIN_TOKENS = 1 << 30), interleaved.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
for spec in "gemma3 270m gemma3" "gemma3 1b gemma3" "llama llama3.2-1b llama3" "qwen2 qwen2.5-1.5b qwen2" "gemma3 4b gemma3"; do
  set -- $spec
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for round in 1 2; do
  for m in 270m 1b llama3.2-1b qwen2.5-1.5b 4b; do
    for bin in doppler-tiled doppler; do
      timeout 60 $B/$bin bench --model $M/$m.gguf --runs 3 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('round $round $m $bin pp512', round(r['pp_tokens_per_second']['mean']))"
    done
  done
done
timeout 60 $B/doppler bench --model $M/270m.gguf --runs 1 --gen-tokens 4 --profile 2>&1 | sed -n '/µs\/prefill/,$p' | head -24
echo "done after ${SECONDS}s"
