#!/bin/bash
# Second round: the quantization written by the residual norm itself (no dispatch of its own)
# and a thread per 4 values in the standalone one; whole models with and without Q8 inputs.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; rm -rf $B; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
echo "== kernel tests (q8)"; timeout 120 $B/kernels_matmul --test-threads=1 q8 2>&1 | grep -E "test |result" | tail -6
echo "== products"; timeout 100 $B/decode_matvec --filter quantize --repeats 5 2>&1 | grep case
SHAPES="gemma3:270m:gemma3 gemma3:1b:gemma3 gemma3:4b:gemma3 llama:llama3.2-1b:llama3 llama:llama3.2-3b:llama3 llama:llama3.1-8b:llama3 qwen2:qwen2.5-1.5b:qwen2 qwen2:qwen2.5-7b:qwen2 qwen3:qwen3-4b:qwen3"
for spec in $SHAPES; do
  IFS=: read a s t <<< "$spec"
  [ -f $M/$s.gguf ] || $B/doppler synth --arch $a --size $s --out $M/$s.gguf --tokenizer-from tests/data/hf/$t/model.gguf 2>&1 | tail -1
done
echo "synth done after ${SECONDS}s"
for round in 1 2; do
  for spec in $SHAPES; do
    IFS=: read a m t <<< "$spec"
    for variant in base q8; do
      if [ $variant = base ]; then export DOPPLER_EXP_NO_Q8=1; else unset DOPPLER_EXP_NO_Q8; fi
      timeout 120 $B/doppler bench --model $M/$m.gguf --runs 2 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('$round $m $variant pp', round(r['pp_tokens_per_second']['mean']), 'tg', round(r['tg_tokens_per_second']['mean'],1))"
    done
  done
done
unset DOPPLER_EXP_NO_Q8
timeout 100 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --profile --json > $OUT/profile-8b-q8.json 2>$M/err || tail -3 $M/err
echo "== greedy text"; for variant in base q8; do
  if [ $variant = base ]; then export DOPPLER_EXP_NO_Q8=1; else unset DOPPLER_EXP_NO_Q8; fi
  timeout 60 $B/doppler run --model $M/llama3.2-1b.gguf --temperature 0 --max-tokens 24 --prompt "The capital of France is" 2>&1 | tail -3
done
echo "done after ${SECONDS}s"
