#!/bin/bash
# Sourced by device scripts (bench/results/*/device-run*.sh) from the repository root on the device:
# the Vulkan loader of .gl (../shared/device/fetch-vulkan-loader.sh) with NVIDIA's driver, the binaries
# packed in .device-carry/doppler.tar.xz unpacked into $B, synthetic models kept in $M.
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# Tests that look for the repository at its path here.
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin
M=/tmp/m
mkdir -p $B $M
tar -xJf .device-carry/doppler.tar.xz -C $B
nvidia-smi --query-gpu=name --format=csv,noheader

# synth SHAPE...: `doppler synth` files of the matrix's shapes (bench/matrix.sh) as $M/SHAPE.gguf; l3b-iq4xs is
# Llama 3.2 3B with every layer matrix IQ4_XS (as `llama-quantize --pure`).
synth() {
  local shape arch tokenizer size weights
  for shape; do
    size=$shape weights=""
    case $shape in
      l3b-iq4xs) arch=llama tokenizer=llama3 size=llama3.2-3b weights="--weights IQ4_XS" ;;
      llama3*) arch=llama tokenizer=llama3 ;;
      mistral*) arch=llama tokenizer=mistral ;;
      qwen2.5*) arch=qwen2 tokenizer=qwen2 ;;
      qwen3*) arch=qwen3 tokenizer=qwen3 ;;
      phi3*) arch=phi3 tokenizer=phi3 ;;
      *) arch=gemma3 tokenizer=gemma3 ;;
    esac
    [ -e $M/$shape.gguf ] || $B/doppler synth --arch $arch --size $size $weights --out $M/$shape.gguf \
      --tokenizer-from tests/data/hf/$tokenizer/model.gguf 2>&1 | tail -1
  done
}

# gpu_tests: the GPU test binaries packed beside doppler (kernels_matmul, hf_reference, kernels_transformer), one
# summary line each.
gpu_tests() {
  local t
  for t in km hf kt; do
    echo "== $t"; timeout 150 $B/$t --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
  done
  echo "tests done after ${SECONDS}s"
}

# lease_prepare: the first call of issue 17's done-when lease, after .llama-carry/build.sh started llama.cpp's
# builds: bench/matrix.sh prepare in the background (it waits for the builds; lease_finish waits for it), the GPU
# tests, bench/heldout.sh's F16 bases, and the matrix's synth files, which it returns once written, linked into
# $M for tg128.
lease_prepare() {
  df -h /tmp | tail -1
  bash bench/matrix.sh prepare > /tmp/matrix-prepare.log 2>&1 &
  local matrix=$!
  gpu_tests
  bash bench/heldout.sh bases
  while kill -0 $matrix 2>/dev/null && ! grep -q "phi3.5-mini.gguf" /tmp/matrix-prepare.log; do sleep 3; done
  echo "synth done after ${SECONDS}s"
  local f
  for f in /tmp/matrix/*.gguf; do ln -sf $f $M/; done
}

# lease_finish: the end of that call, once its own benches are done: waits for llama.cpp's builds (bench/matrix.sh
# prepare) and prints that log and the disk left.
lease_finish() {
  wait
  cat /tmp/matrix-prepare.log
  df -h /tmp | tail -1
}

# tg128 BINARY SHAPE DEPTH LABEL [SWITCH]: one line of decode tokens/s, `doppler bench --runs 2` after a
# 64-token prompt at DEPTH, with SWITCH (NAME=VALUE: a build's temporary switch) set in its environment.
tg128() {
  env ${5:-} timeout 60 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 64 \
    --gen-tokens 128 --json > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$4 $2 d$3 $1 ${5:-} tg128', round(r['tg_tokens_per_second']['mean'], 1))"
}

# pp512 BINARY SHAPE DEPTH LABEL [SWITCH]: one line of prefill tokens/s, `doppler bench --runs 2` of a 512-token
# prompt at DEPTH, as tg128.
pp512() {
  env ${5:-} timeout 90 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 512 \
    --gen-tokens 4 --json > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$4 $2 d$3 $1 ${5:-} pp512', round(r['pp_tokens_per_second']['mean']))"
}

# compare_tg128 SHAPE...: doppler-base against doppler, two interleaved rounds at depth 0 and one at 4096.
compare_tg128() {
  local round shape
  synth "$@"
  for round in r1 r2; do
    for shape; do tg128 doppler-base $shape 0 $round; tg128 doppler $shape 0 $round; done
  done
  for shape; do tg128 doppler-base $shape 4096 r1; tg128 doppler $shape 4096 r1; done
}

# matvec_micro FILTER LABEL: benches/decode_matvec.rs (packed as $B/dm) on its cases matching FILTER, one line a
# case of µs a dispatch and weight GB/s.
matvec_micro() {
  timeout 60 $B/dm --filter "$1" --chain 200 --repeats 5 2>/dev/null | python3 -c "
import json, sys
for line in sys.stdin:
    if line.startswith('{'):
        r = json.loads(line); print('$2', r['case'], round(r['microseconds_per_dispatch'], 2), 'us', round(r['weight_gb_per_second']), 'GB/s')"
}
