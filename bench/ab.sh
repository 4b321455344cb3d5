#!/bin/bash
# A/B on the device: the kernel and model-reference tests, then each shape benched with a base build and a
# new one (pp512 / tg128 at depths 0 and 4096). Carry .gl and .device-carry/bins.tar.xz (doppler, doppler-base,
# and the stripped kernels_transformer and hf_reference test binaries) and this script.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /work && ln -sfn "$PWD" /work/main
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
$B/doppler devices 2>/dev/null | head -5
echo "== kernels_transformer"; $B/kernels_transformer --test-threads 1 attention 2>&1 | grep -E "^test |result|panicked|tolerance" | head -20
echo "== hf_reference"; (cd crates/engine && timeout 200 $B/hf_reference 2>&1 | grep -E "^test |result|panicked|max|error" | head -30)
M=/tmp/m; mkdir -p $M
for s in "gemma3 1b gemma3" "llama llama3.2-1b llama3" "llama llama3.2-3b llama3" "gemma3 4b gemma3" "qwen2 qwen2.5-1.5b qwen2"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for bin in doppler-base doppler; do
    for d in 0 4096; do
      [ $SECONDS -lt ${LIMIT:-540} ] || break 3
      $B/$bin bench --model $M/$2.gguf --runs 2 --depth $d --json > $OUT/$2-$bin-d$d.json 2>$M/err || tail -3 $M/err
      python3 -c "import json,sys; r=json.load(open('$OUT/$2-$bin-d$d.json')); print('$2 $bin d$d', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean']))" 2>/dev/null
    done
  done
done
echo "done after ${SECONDS}s"
