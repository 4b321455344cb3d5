#!/bin/bash
# The peak-bandwidth probe as a streaming kernel (it was a buffer copy), and more rounds of the
# gemma3 270m A/B whose prefill differed by 1-3% in run.sh. Same carry as run.sh.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
R=/tmp/r; M=/tmp/m; mkdir -p $R $M
$B/doppler devices 2>/dev/null | head -1
(cd crates/engine && for i in 1 2 3; do $B/doppler_engine bandwidth --nocapture 2>&1 | grep -E "GB/s|result"; done) | tee $R/bandwidth.txt
$B/doppler synth --arch gemma3 --size 270m --out $M/270m.gguf --tokenizer-from tests/data/hf/gemma3/model.gguf 2>&1 | tail -1
for round in 1 2 3 4; do for bin in doppler doppler-base; do
  $B/$bin bench --model $M/270m.gguf --runs 3 --json > $R/270m-$bin-r$round.json 2>$M/err || tail -3 $M/err
  python3 -c "import json; r=json.load(open('$R/270m-$bin-r$round.json')); print('270m $bin r$round', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))"
done; done | tee $R/bench-270m.txt
tar -czf $OUT/typed2.tar.gz -C $R .
echo "done after ${SECONDS}s"
