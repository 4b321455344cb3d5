#!/bin/bash
# Decode with Q8 inputs and grouped-query decode attention, against the tree before both,
# at depth 0 and 4096: `base` = doppler-q8 (0366f44 plus a temporary switch) with the switch
# DOPPLER_EXP_NO_Q8=1 (f32 inputs, attention a workgroup per query head), `q8` = the same
# binary without it, `new` = eb43a6c (Q8 inputs and grouped attention).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; rm -rf $B; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
echo "== kernel tests on the H100"
timeout 200 $B/kernels_transformer --test-threads=1 attention 2>&1 | grep -E "^test |result" | tail -8
timeout 100 $B/kernels_matmul --test-threads=1 q8 2>&1 | grep -E "result"
SHAPES="gemma3:270m:gemma3 gemma3:1b:gemma3 gemma3:4b:gemma3 llama:llama3.2-1b:llama3 llama:llama3.2-3b:llama3 llama:llama3.1-8b:llama3 qwen2:qwen2.5-1.5b:qwen2 qwen2:qwen2.5-7b:qwen2 qwen3:qwen3-4b:qwen3 phi3:phi3.5-mini:phi3 llama:mistral-7b:mistral"
for spec in $SHAPES; do
  IFS=: read a s t <<< "$spec"
  [ -f $M/$s.gguf ] || $B/doppler synth --arch $a --size $s --out $M/$s.gguf --tokenizer-from tests/data/hf/$t/model.gguf 2>&1 | tail -1
done
echo "synth done after ${SECONDS}s"
for depth in 0 4096; do
  for spec in $SHAPES; do
    IFS=: read a m t <<< "$spec"
    for variant in base q8 new; do
      bin=$B/doppler-q8; [ $variant = new ] && bin=$B/doppler
      if [ $variant = base ]; then export DOPPLER_EXP_NO_Q8=1; else unset DOPPLER_EXP_NO_Q8; fi
      timeout 100 $bin bench --model $M/$m.gguf --runs 2 --depth $depth --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('d$depth $m $variant pp', round(r['pp_tokens_per_second']['mean']), 'tg', round(r['tg_tokens_per_second']['mean'],1))" | tee -a $OUT/results.txt
    done
  done
done
unset DOPPLER_EXP_NO_Q8
timeout 100 $B/doppler bench --model $M/llama3.1-8b.gguf --runs 1 --depth 4096 --profile --json > $OUT/profile-8b-d4096.json 2>$M/err || tail -3 $M/err
echo "done after ${SECONDS}s"
