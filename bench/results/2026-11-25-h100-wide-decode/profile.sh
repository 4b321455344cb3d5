#!/bin/bash
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; mkdir -p $M
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1), r.get('profiled_steps',''))" 2>/dev/null; }
for s in "gemma3 270m gemma3" "llama llama3.2-1b llama3" "gemma3 4b gemma3" "llama llama3.1-8b llama3"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
echo "== profile cost (app cadence: 1 in 32, >= 200 ms apart, prompts included)"
for m in 270m llama3.2-1b 4b; do
  for round in 1 2; do
    for mode in off on; do
      extra=""; [ $mode = on ] && extra="--profile-every 32 --profile-min-interval-ms 200"
      $B/doppler bench --model $M/$m.gguf --runs 3 --json $extra > $OUT/cost-$m-$mode-$round.json 2>$M/err || tail -3 $M/err
      res $OUT/cost-$m-$mode-$round.json "cost $m profile-$mode r$round pp/tg/steps"
    done
  done
done
echo "== decode profiles"
for m in 4b llama3.1-8b; do
  $B/doppler bench --model $M/$m.gguf --runs 2 --profile --json > $OUT/profile-$m.json 2>$M/err || tail -3 $M/err
  python3 - $OUT/profile-$m.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
print(sys.argv[1], 'tg', round(r['tg_tokens_per_second']['mean'],1))
for k in r.get('kernels_per_token',[])[:14]: print(' ', k)
PY
done
echo "done after ${SECONDS}s"
