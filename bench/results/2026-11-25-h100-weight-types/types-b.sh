#!/bin/bash
# Call B: pp512/tg128 of each one-type model, DOPPLER then llama.cpp Vulkan and CUDA.
set -uo pipefail
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; M=/tmp/m; L=/tmp/l/llama.cpp; R=/tmp/r; mkdir -p $R
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))" 2>/dev/null; }
lres() { python3 -c "
import json; r=json.load(open('$1')); print('$2', ' '.join(str(round(x['avg_ts'],1)) for x in r))" 2>/dev/null; }
F="llama3.2-1b-Q4_K_M llama3.2-1b-Q8_0 llama3.2-1b-Q2_K llama3.2-1b-Q3_K llama3.2-1b-IQ4_NL llama3.2-1b-IQ4_XS llama3.2-1b-MXFP4 llama3.1-8b-Q4_K_M llama3.1-8b-IQ4_XS llama3.1-8b-Q3_K llama3.1-8b-Q8_0"
for f in $F; do
  $B/doppler bench --model $M/$f.gguf --runs 3 --json > $R/$f-doppler.json 2>$R/err || tail -2 $R/err
  res $R/$f-doppler.json "$f doppler pp/tg (llama.cpp building)"
done
while [ ! -f /tmp/l/vk.done ] || [ ! -f /tmp/l/cuda.done ]; do sleep 5; [ $SECONDS -lt 420 ] || break; done
echo "builds: vk=$(cat /tmp/l/vk.done 2>/dev/null) cuda=$(cat /tmp/l/cuda.done 2>/dev/null) after ${SECONDS}s"
for f in llama3.2-1b-Q4_K_M llama3.2-1b-Q8_0 llama3.2-1b-Q2_K llama3.2-1b-Q3_K llama3.2-1b-IQ4_NL llama3.2-1b-IQ4_XS llama3.2-1b-MXFP4 llama3.1-8b-Q4_K_M llama3.1-8b-IQ4_XS llama3.1-8b-Q3_K llama3.1-8b-Q8_0; do
  [ $SECONDS -lt ${LIMIT:-560} ] || break
  for b in vk cuda; do
    LD_LIBRARY_PATH=$L/build-$b/bin timeout 90 $L/build-$b/bin/llama-bench -m $M/$f.gguf -ngl 99 -p 512 -n 128 -r 3 -o json > $R/$f-$b.json 2>$R/err || tail -2 $R/err
    lres $R/$f-$b.json "$f llama.cpp-$b pp/tg"
  done
done
tar -czf $OUT/types.tar.gz -C $R .
echo "done after ${SECONDS}s"
