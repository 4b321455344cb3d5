#!/bin/bash
# Every submit inside a validation error scope (the failed-submit path): decode speed base vs merged.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; R=/tmp/r; mkdir -p $M $R
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))" 2>/dev/null; }
for s in "gemma3 270m gemma3" "llama llama3.2-1b llama3"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for round in 1 2; do for bin in doppler-base doppler; do
    [ $SECONDS -lt 200 ] || break 3
    $B/$bin bench --model $M/$2.gguf --runs 3 --json > $R/$2-$bin-$round.json 2>$R/err || tail -2 $R/err
    res $R/$2-$bin-$round.json "$2 $bin r$round pp/tg"
  done; done
done
tar -czf $OUT/submit.tar.gz -C $R .
echo "done after ${SECONDS}s"
