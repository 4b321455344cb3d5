#!/bin/bash
# Loading large synthetic models: load time and GB/s, host memory (RssAnon = beyond the mapped file), TTFT, tg;
# then a model over a given GPU budget refused before upload.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; mkdir -p $M
measured() {  # name, command...: max RssAnon / RssFile in MiB while it runs
  local name=$1; shift
  "$@" > $OUT/$name.out 2> $OUT/$name.err & local pid=$!
  local maxa=0 maxf=0 a f
  while kill -0 $pid 2>/dev/null; do
    a=$(awk '/RssAnon/{print $2}' /proc/$pid/status 2>/dev/null); f=$(awk '/RssFile/{print $2}' /proc/$pid/status 2>/dev/null)
    [ -n "$a" ] && [ "$a" -gt "$maxa" ] && maxa=$a; [ -n "$f" ] && [ "$f" -gt "$maxf" ] && maxf=$f
    sleep 0.05
  done
  wait $pid; local rc=$?
  echo "$name rc=$rc max RssAnon $((maxa/1024)) MiB, max RssFile $((maxf/1024)) MiB"
}
for s in "llama llama3.1-8b llama3" "gemma3 12b gemma3" "gemma3 27b gemma3"; do
  set -- $s
  t0=$SECONDS; $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1; echo "synth $((SECONDS-t0)) s"
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  measured bench-$2 $B/doppler bench --model $M/$2.gguf --runs 1 --prompt-tokens 128 --gen-tokens 32 --json
  python3 -c "import json; r=json.load(open('$OUT/bench-$2.out')); print('  load', round(r['load_seconds'],2), 's', round(r['load_gigabytes_per_second'],2), 'GB/s; ttft', round(r['ttft_ms']['mean'],1), 'ms; tg', round(r['tg_tokens_per_second']['mean'],1), '; GPU', r['gpu_memory_bytes']>>20, 'MiB')" 2>&1 | tail -1
  [ $SECONDS -lt ${LIMIT:-420} ] || break
done
echo "== same greedy tokens as the mapped-at-creation upload (8b, 27b)"
for m in llama3.1-8b 27b; do
  for bin in doppler doppler-base; do
    $B/$bin run --model $M/$m.gguf --prompt "Once upon a time" --max-tokens 16 --temperature 0 --json 2>/dev/null > $OUT/greedy-$m-$bin.json
  done
  cmp -s $OUT/greedy-$m-doppler.json $OUT/greedy-$m-doppler-base.json && echo "$m: same tokens" || { echo "$m: DIFFERENT"; head -c 300 $OUT/greedy-$m-doppler.json; head -c 300 $OUT/greedy-$m-doppler-base.json; }
done
measured base-bench-27b $B/doppler-base bench --model $M/27b.gguf --runs 1 --prompt-tokens 128 --gen-tokens 32 --json
python3 -c "import json; r=json.load(open('$OUT/base-bench-27b.out')); print('  base load', round(r['load_seconds'],2), 's', round(r['load_gigabytes_per_second'],2), 'GB/s')" 2>&1 | tail -1
echo "== over budget"
measured refuse-27b $B/doppler run --model $M/27b.gguf --gpu-memory 8GiB --prompt hi --max-tokens 4
cat $OUT/refuse-27b.err | tail -3
df -h /tmp | tail -1
echo "done after ${SECONDS}s"
