#!/bin/bash
# Decode/prefill base vs new on every shape, then the live profiler's cost at the app's cadence.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; mkdir -p $M
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1), r.get('profiled_steps',''))" 2>/dev/null; }
for s in "gemma3 270m gemma3" "gemma3 1b gemma3" "llama llama3.2-1b llama3" "llama llama3.2-3b llama3" "gemma3 4b gemma3" "llama llama3.1-8b llama3" "qwen3 qwen3-4b qwen3"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for round in 1 2; do
    for bin in doppler-base doppler; do
      [ $SECONDS -lt ${LIMIT:-420} ] || break 3
      $B/$bin bench --model $M/$2.gguf --runs 2 --json > $OUT/$2-$bin-$round.json 2>$M/err || tail -3 $M/err
      res $OUT/$2-$bin-$round.json "$2 $bin r$round pp/tg"
    done
  done
done
echo "== profile cost (app cadence: 1 in 32, >= 200 ms apart)"
for m in 270m llama3.2-1b 4b; do
  for round in 1 2; do
    for mode in off on; do
      [ $SECONDS -lt ${LIMIT2:-560} ] || break 3
      extra=""; [ $mode = on ] && extra="--profile-every 32 --profile-min-interval-ms 200"
      $B/doppler bench --model $M/$m.gguf --runs 3 --json $extra > $OUT/cost-$m-$mode-$round.json 2>$M/err || tail -3 $M/err
      res $OUT/cost-$m-$mode-$round.json "cost $m profile-$mode r$round pp/tg/steps"
    done
  done
done
echo "done after ${SECONDS}s"
