#!/bin/bash
# Llama 3.1 70B (42.7 GB) on an H100: load time, host memory beyond the mapped file, TTFT, tg.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
t0=$SECONDS; $B/doppler synth --arch llama --size llama3.1-70b --out $M/70b.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; echo "synth $((SECONDS-t0)) s"
for run in warm-1 warm-2 default-ctx; do
  if [ $run = default-ctx ]; then cmd=($B/doppler run --model $M/70b.gguf --prompt "Once upon a time" --max-tokens 8 --temperature 0);
  else cmd=($B/doppler bench --model $M/70b.gguf --runs 1 --prompt-tokens 128 --gen-tokens 32 --json); fi
  "${cmd[@]}" > $OUT/$run.out 2> $OUT/$run.err & pid=$!
  maxa=0; while kill -0 $pid 2>/dev/null; do a=$(awk '/RssAnon/{print $2}' /proc/$pid/status 2>/dev/null); [ -n "$a" ] && [ "$a" -gt "$maxa" ] && maxa=$a; sleep 0.05; done
  wait $pid; echo "$run rc=$? max RssAnon $((maxa/1024)) MiB"
  python3 -c "import json; r=json.load(open('$OUT/$run.out')); print('  ', r['adapter'], 'load %.2f s, %.2f GB/s; ttft %.1f ms; tg %.1f; GPU %.1f GB' % (r['load_seconds'], r['load_gigabytes_per_second'], r['ttft_ms']['mean'], r['tg_tokens_per_second']['mean'], r['gpu_memory_bytes']/1e9))" 2>/dev/null || tail -4 $OUT/$run.out $OUT/$run.err
done
echo "done after ${SECONDS}s"
