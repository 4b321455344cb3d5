#!/bin/bash
# Split decode attention for heads of 96 values (Phi-3): the transformer kernel tests on the GPU, then
# phi3.5-mini at depths 0 and 4096 before (doppler-base = 39f3e9d's build) and after. Carry .gl and
# .device-carry/bins.tar.xz (doppler, doppler-base, kernels_transformer).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
R=/tmp/r; M=/tmp/m; mkdir -p $R $M
$B/doppler devices 2>/dev/null | head -1
(cd crates/engine && $B/kernels_transformer 2>&1 | grep -E "^test |result|panicked") | tee $R/tests.txt
for s in "phi3 phi3.5-mini phi3" "gemma3 1b gemma3"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for d in 0 4096; do for bin in doppler-base doppler; do
    $B/$bin bench --model $M/$2.gguf --runs 2 --depth $d --json > $R/$2-$bin-d$d.json 2>$M/err || tail -3 $M/err
    python3 -c "import json; r=json.load(open('$R/$2-$bin-d$d.json')); print('$2 $bin d$d', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))"
  done; done
done | tee $R/bench.txt
tar -czf $OUT/phi3.tar.gz -C $R .
echo "done after ${SECONDS}s"
