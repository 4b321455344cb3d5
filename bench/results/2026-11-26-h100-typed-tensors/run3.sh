#!/bin/bash
# `doppler serve` with 1, 4 and 16 concurrent clients (streams.py, completions of 128 tokens): requests
# share the GPU through the worker's queue one at a time (no batched decode yet), so throughput should
# stay near the single-stream decode speed while latency grows with the queue. Same carry as run.sh.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
R=/tmp/r; M=/tmp/m; mkdir -p $R $M
$B/doppler devices 2>/dev/null | head -1
D=bench/results/2026-11-26-h100-typed-tensors
for s in "llama llama3.2-1b llama3" "gemma3 1b gemma3"; do
  set -- $s; name=$2
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  $B/doppler bench --model $M/$2.gguf --runs 2 --json > $R/$2-bench.json 2>/dev/null
  python3 -c "import json; r=json.load(open('$R/$2-bench.json')); print('$2 bench tg128', round(r['tg_tokens_per_second']['mean'],1))"
  $B/doppler serve --model $M/$2.gguf --port 8088 --ctx 2048 2>$R/$2-serve.log & pid=$!
  for i in $(seq 120); do curl -sf http://127.0.0.1:8088/health >/dev/null && break; sleep 0.5; done
  for n in "1 4" "4 2" "16 1"; do set -- $n; python3 $D/streams.py 8088 $1 $2 128 | sed "s/^/$name /" | tee -a $R/streams-$name.txt; done
  kill $pid; wait $pid 2>/dev/null
done 2>&1 | tee $R/streams.txt
tar -czf $OUT/streams.tar.gz -C $R .
echo "done after ${SECONDS}s"
