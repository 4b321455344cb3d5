#!/bin/bash
# The shared value table alone: H100 kernel tests, then base vs new on the table types and Q4_K_M.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /work && ln -sfn "$PWD" /work/main
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; R=/tmp/r; mkdir -p $M $R
(cd crates/engine && timeout 60 $B/kernels_matmul > $R/kernels_matmul.txt 2>&1); echo "kernels_matmul rc=$? $(grep -E '^test result' $R/kernels_matmul.txt)"; grep FAILED $R/kernels_matmul.txt | head
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))" 2>/dev/null; }
for s in "llama3.2-1b Q4_K_M" "llama3.2-1b IQ4_NL" "llama3.2-1b IQ4_XS" "llama3.2-1b MXFP4" "llama3.1-8b IQ4_XS" "llama3.1-8b MXFP4"; do
  set -- $s
  [ -f $M/$1-$2.gguf ] || $B/doppler synth --arch llama --size $1 --weights $2 --out $M/$1-$2.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
  for round in 1 2; do for bin in doppler-base doppler; do
    [ $SECONDS -lt ${LIMIT:-300} ] || break 3
    $B/$bin bench --model $M/$1-$2.gguf --runs 3 --json > $R/$1-$2-$bin-$round.json 2>$R/err || tail -2 $R/err
    res $R/$1-$2-$bin-$round.json "$1 $2 $bin r$round pp/tg"
  done; done
done
tar -czf $OUT/final.tar.gz -C $R .
echo "done after ${SECONDS}s"
