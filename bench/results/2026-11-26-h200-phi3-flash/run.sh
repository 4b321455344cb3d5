#!/bin/bash
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
timeout 200 $B/kernels_transformer attention 2>&1 | tail -5
for s in "phi3 phi3.5-mini phi3" "llama llama3.2-1b llama3"; do set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
$B/doppler logits --model $M/phi3.5-mini.gguf --prompt "The quick brown fox jumps over the lazy dog" --top 5 > $OUT/logits-new.json
$B/doppler-base logits --model $M/phi3.5-mini.gguf --prompt "The quick brown fox jumps over the lazy dog" --top 5 > $OUT/logits-base.json
for d in 0 4096; do for bin in doppler-base doppler; do
  timeout 120 $B/$bin bench --model $M/phi3.5-mini.gguf --runs 2 --gen-tokens 32 --depth $d --json > $OUT/phi-$bin-d$d.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$OUT/phi-$bin-d$d.json'));print('phi d$d $bin pp', round(r['pp_tokens_per_second']['mean']), 'tg', round(r['tg_tokens_per_second']['mean'],1))"
done; done
echo "done after ${SECONDS}s"
