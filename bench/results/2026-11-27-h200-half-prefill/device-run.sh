#!/bin/bash
# The f16 prefill product (matmul_half) against the tiled kernel: kernel tests, then whole
# models with and without it (DOPPLER_AB_TILED, a temporary switch of the measuring binary),
# perplexity of both over the same text, and a profile of the 8B with it.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
echo "== kernel tests"; timeout 200 $B/kernels_matmul --test-threads=1 ${TESTS:-matmul_matches} 2>&1 | grep -E "test |result|worst|failures|panicked|f16 matmul|error" | tail -40
for spec in "llama llama3.2-1b llama3" "llama llama3.1-8b llama3" "gemma3 4b gemma3" "qwen2 qwen2.5-7b qwen2"; do
  set -- $spec
  [ -f $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
echo "synth done after ${SECONDS}s"
cat README.md crates/engine/src/model/forward.rs > $M/text.txt
for m in ${PPL_MODELS:-llama3.2-1b 4b}; do
  for variant in tiled half; do
    if [ $variant = tiled ]; then export DOPPLER_AB_TILED=1; else unset DOPPLER_AB_TILED; fi
    timeout 100 $B/doppler perplexity --model $M/$m.gguf --ctx 512 --file $M/text.txt 2>&1 | grep -E "PPL|rror" | tail -2 | sed "s/^/$m $variant /"
  done
done
for round in $(seq ${ROUNDS:-2}); do
  for m in llama3.2-1b llama3.1-8b 4b qwen2.5-7b; do
    for variant in ${VARIANTS:-tiled half}; do
      if [ $variant = tiled ]; then export DOPPLER_AB_TILED=1; else unset DOPPLER_AB_TILED; fi
      case $variant in half-*) export DOPPLER_AB_TARGET=${variant#half-};; *) unset DOPPLER_AB_TARGET;; esac
      case $variant in k32) export DOPPLER_AB_TILE_K=32;; *) unset DOPPLER_AB_TILE_K;; esac
      timeout 120 $B/doppler bench --model $M/$m.gguf --runs 2 --gen-tokens 16 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$round $m $variant pp', round(r['pp_tokens_per_second']['mean']), 'tg', round(r['tg_tokens_per_second']['mean'],1))"
    done
  done
done
unset DOPPLER_AB_TILED DOPPLER_AB_TARGET
timeout 100 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --gen-tokens 16 --profile --json > $OUT/profile-8b-half.json 2>$M/err || tail -3 $M/err
python3 -c "
import json;r=json.load(open('$OUT/profile-8b-half.json'))
for k in r['kernels_per_prefill'][:16]: print(k['kernel'], k['dispatches_per_token'], round(k['microseconds_per_token']), round(k['share'],3))
"
echo "done after ${SECONDS}s"
