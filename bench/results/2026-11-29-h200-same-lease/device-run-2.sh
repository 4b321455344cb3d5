#!/bin/bash
# Q5_K and IQ4_XS decode products on the Q8 input (Q5_K also wide, as Q4_K), doppler, against 7f7d2c9,
# doppler-base, on the held-out files of device-run.sh whose decode fell short (Llama 3.2 3B Q5_K_M and
# IQ4_XS, remade the same way: F16 synth, llama-quantize built for the CPU only) and a Q4_K_M matrix file;
# first the products' tests on this GPU. pp512 / tg128, two interleaved rounds at depth 0 and one at 4096.
set -uo pipefail
source bench/device-env.sh
H=/tmp/h; L=/tmp/l/llama.cpp
mkdir -p $H /tmp/l && tar xJf .llama-carry/llama-cpp-src.tar.xz -C /tmp/l
( cd $L && cmake -B build-cpu -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF > /tmp/l/cpu.log 2>&1 && cmake --build build-cpu -j14 --target llama-quantize >> /tmp/l/cpu.log 2>&1; echo $? > /tmp/l/cpu.done ) &
[ -f /tmp/h/l3b-f16.gguf ] || echo "== km"; timeout 120 $B/km --test-threads=1 q8_input_matvec 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
$B/doppler synth --arch llama --size llama3.2-3b --weights F16 --out $H/l3b-f16.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
synth llama3.2-3b
wait
[ "$(cat /tmp/l/cpu.done)" = 0 ] || { tail -20 /tmp/l/cpu.log; exit 1; }
for q in Q5_K_M IQ4_XS; do
  LD_LIBRARY_PATH=$L/build-cpu/bin $L/build-cpu/bin/llama-quantize $H/l3b-f16.gguf $M/l3b-$q.gguf $q > $H/q.log 2>&1 || tail -5 $H/q.log
done
echo "quantized after ${SECONDS}s"
row() {
  timeout 90 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$4 $2 d$3 $1', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'], 1))"
}
for round in r1 r2; do for f in l3b-Q5_K_M l3b-IQ4_XS; do for b in doppler-base doppler; do row $b $f 0 $round; done; done; done
for f in l3b-Q5_K_M l3b-IQ4_XS; do for b in doppler-base doppler; do row $b $f 4096 r1; done; done
for b in doppler-base doppler; do row $b llama3.2-3b 0 r1; done
echo "done after ${SECONDS}s"
