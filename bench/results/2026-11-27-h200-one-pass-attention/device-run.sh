#!/bin/bash
# One-pass tensor-core prefill attention (doppler) against the staged two-pass kernel (doppler-staged, 5b61e51)
# and the build before both (doppler-base, 01509c4), one binary after the other on the same files; first the GPU
# tests whose attention runs on that kernel (kernels_transformer against f64, hf_reference against transformers).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
for t in kernels_transformer hf_reference; do
  echo "== $t"; timeout 200 $B/$t --test-threads=1 2>&1 | grep -E "^test |test result|panicked|failures|left|right|worst" | tail -30
done
for spec in "llama llama3.1-8b llama3" "llama llama3.2-1b llama3" "phi3 phi3.5-mini phi3" "gemma3 4b gemma3"; do
  set -- $spec
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for m in llama3.1-8b llama3.2-1b phi3.5-mini 4b; do
  for depth in 4096 0; do
    [ $depth = 0 ] && [ $m != llama3.1-8b ] && continue
    for bin in doppler-base doppler-staged doppler; do
      timeout 90 $B/$bin bench --model $M/$m.gguf --runs 2 --depth $depth --gen-tokens 16 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$m d$depth $bin pp512', round(r['pp_tokens_per_second']['mean']))"
    done
  done
done
for bin in doppler-staged doppler; do
  echo "== perplexity $bin"; timeout 90 $B/$bin perplexity --model $M/llama3.2-1b.gguf --file README.md --ctx 1024 2>&1 | tail -1
done
timeout 60 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --depth 4096 --gen-tokens 8 --profile 2>&1 | grep -E "^attention|pp512"
echo "done after ${SECONDS}s"
