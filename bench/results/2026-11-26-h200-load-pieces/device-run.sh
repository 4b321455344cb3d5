#!/bin/bash
# Loading: base (stacks joined byte by byte on the host) against new (pieces streamed through the staging
# buffers), Llama 3.1 8B with a warm and (where the container allows) a cold page cache, then Llama 3.1 70B (~42 GB).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/ld; mkdir -p $B; tar -xJf .device-carry/load.tar.xz -C $B
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
  printf "%-22s rc=%d max RssAnon %5d MiB, max RssFile %6d MiB" $name $rc $((maxa/1024)) $((maxf/1024))
  python3 -c "import json; r=json.load(open('$OUT/$name.out')); print('  load %.2f s, %.2f GB/s; ttft %.1f ms; tg %.1f' % (r['load_seconds'], r['load_gigabytes_per_second'], r['ttft_ms']['mean'], r['tg_tokens_per_second']['mean']))" 2>/dev/null || { echo; tail -3 $OUT/$name.err; }
}
bench() { measured $1 $B/$2 bench --model $M/$3.gguf --runs 1 --prompt-tokens 128 --gen-tokens 32 --json; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; }
t0=$SECONDS; $B/doppler synth --arch llama --size llama3.1-8b --out $M/8b.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; echo "synth $((SECONDS-t0)) s"
cat $M/8b.gguf > /dev/null
for round in 1 2; do bench warm-base-r$round doppler-base 8b; bench warm-new-r$round doppler 8b; done
if cold; then
  echo "drop_caches works"
  for round in 1 2; do cold; bench cold-base-r$round doppler-base 8b; cold; bench cold-new-r$round doppler 8b; done
else
  echo "drop_caches refused: no cold runs"
fi
for bin in doppler doppler-base; do
  $B/$bin run --model $M/8b.gguf --prompt "Once upon a time" --max-tokens 16 --temperature 0 2>/dev/null > $OUT/greedy-8b-$bin.txt
done
cmp -s $OUT/greedy-8b-doppler.txt $OUT/greedy-8b-doppler-base.txt && echo "8b: same greedy text" || echo "8b: DIFFERENT greedy text"
echo "8b done after ${SECONDS}s"; df -h /tmp | tail -1; free -g | head -2
t0=$SECONDS; $B/doppler synth --arch llama --size llama3.1-70b --out $M/70b.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; echo "synth 70b $((SECONDS-t0)) s"
ls -la $M/70b.gguf
bench new-70b doppler 70b
[ $SECONDS -lt 430 ] && bench base-70b doppler-base 70b
[ $SECONDS -lt 470 ] && $B/doppler run --model $M/70b.gguf --prompt "Once upon a time" --max-tokens 8 --temperature 0 2>&1 | tail -3
echo "done after ${SECONDS}s"
