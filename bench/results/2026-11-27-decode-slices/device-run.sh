#!/bin/bash
# Decode attention on teams of lanes per key, a workgroup per (kv head, query group, key slice): doppler
# (new) against doppler-base (per-query-head slices, da149fe's kernel); the GPU attention tests and the
# transformers fixtures of the new binary first, then tg128 at depth 0 and 4096, interleaved, then a
# profile of the Llama 8B decode step at depth 4096.
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
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
echo "synth done after ${SECONDS}s"
for round in 1 2; do
  for depth in 0 4096; do
    for m in llama3.1-8b llama3.2-1b qwen2.5-7b 270m 4b phi3.5-mini; do
      for bin in doppler-base doppler; do
        timeout 60 $B/$bin bench --model $M/$m.gguf --runs 2 --depth $depth --prompt-tokens 64 --gen-tokens 128 --json > $M/r.json 2>$M/err || tail -3 $M/err
        python3 -c "import json;r=json.load(open('$M/r.json'));print('round $round $m d$depth $bin tg128', round(r['tg_tokens_per_second']['mean'],1))"
      done
    done
  done
  echo "round $round done after ${SECONDS}s"
done
timeout 60 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --depth 4096 --prompt-tokens 64 --gen-tokens 32 --profile --json > $OUT/profile-8b-d4096.json 2>$M/err || tail -3 $M/err
python3 -c "
import json;r=json.load(open('$OUT/profile-8b-d4096.json'))
for k in r['kernels_per_token'][:14]: print(k)"
echo "done after ${SECONDS}s"
