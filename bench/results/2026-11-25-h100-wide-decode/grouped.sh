#!/bin/bash
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /work && ln -sfn "$PWD" /work/main
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
echo "== kernels_matmul: $($B/kernels_matmul 2>&1 | grep -E 'test result|panicked|FAILED' | head -4 | tr '\n' ' ')"
$B/decode_matvec --filter 8b --chain 100 --repeats 5 2>&1 | python3 -c "
import json,sys
for l in sys.stdin:
  try: r=json.loads(l)
  except Exception: print(l.strip()); continue
  print(r['case'], round(r['microseconds_per_dispatch'],1), 'us', round(r['weight_gb_per_second']), 'GB/s')"
M=/tmp/m; mkdir -p $M
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))" 2>/dev/null; }
for s in "llama llama3.2-1b llama3" "llama llama3.2-3b llama3" "gemma3 4b gemma3" "qwen3 qwen3-4b qwen3" "llama llama3.1-8b llama3" "qwen2 qwen2.5-7b qwen2"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for round in 1 2; do
    for bin in doppler-base doppler; do
      [ $SECONDS -lt ${LIMIT:-400} ] || break 3
      $B/$bin bench --model $M/$2.gguf --runs 2 --json > $OUT/$2-$bin-$round.json 2>$M/err || tail -3 $M/err
      res $OUT/$2-$bin-$round.json "$2 $bin r$round pp/tg"
    done
  done
done
$B/doppler logits --model $M/llama3.2-1b.gguf --prompt "The quick brown fox jumps over the lazy dog" --top 5 > $OUT/logits-new.json 2>&1
$B/doppler-base logits --model $M/llama3.2-1b.gguf --prompt "The quick brown fox jumps over the lazy dog" --top 5 > $OUT/logits-base.json 2>&1
$B/doppler run --model $M/llama3.2-1b.gguf --prompt "Once upon a time" --max-tokens 24 --temperature 0 2>/dev/null | tail -2 > $OUT/run-new.txt
$B/doppler-base run --model $M/llama3.2-1b.gguf --prompt "Once upon a time" --max-tokens 24 --temperature 0 2>/dev/null | tail -2 > $OUT/run-base.txt
cmp $OUT/run-new.txt $OUT/run-base.txt && echo "greedy 24 tokens: same"; head -c 300 $OUT/run-new.txt; echo
echo "done after ${SECONDS}s"
