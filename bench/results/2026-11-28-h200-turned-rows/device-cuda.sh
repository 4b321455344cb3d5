#!/bin/bash
# Qwen3 4B against llama.cpp CUDA in one lease: llama-bench built for CUDA only (sm_90, all 16 cores) while the
# model is synthesized, then `llama-bench -p 512 -n 128 -d 0,4096 -r 2` and `doppler bench --runs 2 --depth D`
# on the same file, unless the build is not done by 500 s.
set -uo pipefail
C=.llama-carry
mkdir -p /tmp/l && tar xJf $C/llama-cpp-src.tar.xz -C /tmp/l
( cd /tmp/l/llama.cpp && cmake -B build-cuda -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    > /tmp/l/cuda.log 2>&1 && cmake --build build-cuda -j16 --target llama-bench >> /tmp/l/cuda.log 2>&1; echo $? > /tmp/l/cuda.done ) &
source bench/device-env.sh
synth qwen3-4b
for depth in 0 4096; do
  timeout 60 $B/doppler bench --model $M/qwen3-4b.gguf --runs 2 --depth $depth --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('doppler qwen3-4b d$depth pp512', round(r['pp_tokens_per_second']['mean']), 'tg128', round(r['tg_tokens_per_second']['mean'],1))"
done
while [ ! -f /tmp/l/cuda.done ] && [ $SECONDS -lt 500 ]; do sleep 5; done
echo "build: $(cat /tmp/l/cuda.done 2>/dev/null || echo unfinished) after ${SECONDS}s"; tail -2 /tmp/l/cuda.log
L=/tmp/l/llama.cpp/build-cuda/bin
[ "$(cat /tmp/l/cuda.done 2>/dev/null)" = 0 ] && LD_LIBRARY_PATH=$L timeout 80 $L/llama-bench -m $M/qwen3-4b.gguf -ngl 99 -p 512 -n 128 -d 0,4096 -r 2 2>&1 | grep -E "^\|" 
for depth in 0 4096; do
  timeout 60 $B/doppler bench --model $M/qwen3-4b.gguf --runs 2 --depth $depth --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('doppler qwen3-4b d$depth pp512', round(r['pp_tokens_per_second']['mean']), 'tg128', round(r['tg_tokens_per_second']['mean'],1))"
done
echo "done after ${SECONDS}s"
