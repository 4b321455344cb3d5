#!/bin/bash
# The live profiler's cost on the device: tg128 with the app's cadence (one decode step in EVERY=32 timed, none within INTERVAL_MS=200 ms of the last) against none, same binary, runs interleaved.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
for s in "gemma3 270m gemma3" "gemma3 1b gemma3" "llama llama3.2-1b llama3" "gemma3 4b gemma3"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for round in 1 2; do
    for mode in off on; do
      extra=""; [ $mode = on ] && extra="--profile-every ${EVERY:-32} --profile-min-interval-ms ${INTERVAL_MS:-200}"
      $B/doppler bench --model $M/$2.gguf --runs 3 --prompt-tokens 512 --json $extra > $OUT/$2-$mode-$round.json 2>$M/err || tail -3 $M/err
      python3 -c "import json; r=json.load(open('$OUT/$2-$mode-$round.json')); print('$2 profile-$mode round $round', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1), r['profiled_steps'])"
    done
  done
done
echo "done after ${SECONDS}s"
