#!/bin/bash
# Variants chosen at run time by a temporary switch in one build (7966be0 plus the switches, not committed):
#   DOPPLER_FLASH_96=k48: heads of 96 take 48-key tiles (three key blocks for three slabs of 32; 64-key tiles
#     leave one slab two of their four blocks), the queries staged in a 64-row key tile;
#   DOPPLER_FLASH_96=s16: slabs of 16 dimensions (24 subgroups, eight lanes a row in the scalar passes);
#   DOPPLER_IQ4_NIBBLE=1: IQ4_XS's Q8 products look up each nibble in a 64-word table (16 entries per byte
#     place, no bank conflicts) instead of each byte in the 256-word pair table.
# First their tests on this GPU, then Phi-3.5 pp512 at depth 4096 and Llama 3.2 3B IQ4_XS (llama-quantize,
# built for the CPU here) tg128, interleaved rounds.
set -uo pipefail
source bench/device-env.sh
H=/tmp/h; L=/tmp/l/llama.cpp
mkdir -p $H /tmp/l && tar xJf .llama-carry/llama-cpp-src.tar.xz -C /tmp/l
( cd $L && cmake -B build-cpu -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF > /tmp/l/cpu.log 2>&1 && cmake --build build-cpu -j8 --target llama-quantize >> /tmp/l/cpu.log 2>&1
  echo $? > /tmp/l/cpu.done
  $B/doppler synth --arch llama --size llama3.2-3b --weights F16 --out $H/l3b-f16.gguf --tokenizer-from tests/data/hf/llama3/model.gguf > $H/synth.log 2>&1
  LD_LIBRARY_PATH=$L/build-cpu/bin $L/build-cpu/bin/llama-quantize $H/l3b-f16.gguf $M/l3b-IQ4_XS.gguf IQ4_XS > $H/q.log 2>&1
  rm -f $H/l3b-f16.gguf ) &
synth phi3.5-mini
for v in "" k48 s16; do
  echo "== kt attention DOPPLER_FLASH_96=$v"
  DOPPLER_FLASH_96=$v timeout 100 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
done
echo "== km q8 DOPPLER_IQ4_NIBBLE=1"
DOPPLER_IQ4_NIBBLE=1 timeout 100 $B/km --test-threads=1 q8_input 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
echo "tests after ${SECONDS}s"
pp() {  # pp VARIANT DEPTH ROUND
  DOPPLER_FLASH_96=$1 timeout 90 $B/doppler bench --model $M/phi3.5-mini.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 phi3.5-mini d$2 flash96=${1:-s32} pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do for v in "" k48 s16; do pp "$v" 4096 $round; done; done
for v in "" k48 s16; do pp "$v" 0 r1; done
echo "phi after ${SECONDS}s"
DOPPLER_FLASH_96=s16 timeout 90 $B/doppler bench --model $M/phi3.5-mini.gguf --runs 1 --depth 4096 --gen-tokens 4 --profile > $OUT/profile-phi-s16.txt 2>&1
timeout 90 $B/doppler bench --model $M/phi3.5-mini.gguf --runs 1 --depth 4096 --gen-tokens 4 --profile > $OUT/profile-phi-s32.txt 2>&1
wait
[ "$(cat /tmp/l/cpu.done)" = 0 ] || tail -5 /tmp/l/cpu.log
tail -2 $H/q.log
echo "quantized after ${SECONDS}s"
tg() {  # tg NIBBLE DEPTH ROUND
  DOPPLER_IQ4_NIBBLE=$1 timeout 60 $B/doppler bench --model $M/l3b-IQ4_XS.gguf --runs 2 --depth $2 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 l3b-IQ4_XS d$2 nibble=${1:-0}', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'], 1))"
}
[ -f $M/l3b-IQ4_XS.gguf ] && {
  for round in r1 r2; do tg "" 0 $round; tg 1 0 $round; done
  tg "" 4096 r1; tg 1 4096 r1
  timeout 60 $B/doppler bench --model $M/l3b-IQ4_XS.gguf --runs 1 --prompt-tokens 64 --gen-tokens 64 --profile > $OUT/profile-l3b-IQ4_XS.txt 2>&1
}
echo "done after ${SECONDS}s"
