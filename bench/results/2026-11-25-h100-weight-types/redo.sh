#!/bin/bash
# Redo with the shaders really embedded: prefill tile variants and the IQ4 value table, base vs new.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /work && ln -sfn "$PWD" /work/main
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
M=/tmp/m; R=/tmp/r; mkdir -p $M $R
V="128x128x32x32 128x128x32x64 128x128x64x64"
for v in $V; do
  (cd crates/engine && DOPPLER_COOP_TILE=$v timeout 60 $B/kernels_matmul > $R/matmul-$v.txt 2>&1); echo "$v rc=$? $(grep -E '^test result' $R/matmul-$v.txt)"; grep -E "FAILED" $R/matmul-$v.txt | head -4
done
res() { python3 -c "import json; r=json.load(open('$1')); print('$2', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))" 2>/dev/null; }
for s in "llama3.2-1b Q4_K_M" "llama3.2-1b IQ4_XS" "llama3.1-8b Q4_K_M" "llama3.1-8b IQ4_XS"; do
  set -- $s
  $B/doppler synth --arch llama --size $1 --weights $2 --out $M/$1-$2.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
  for v in base $V; do
    [ $SECONDS -lt ${LIMIT:-380} ] || break 2
    if [ $v = base ]; then bin=doppler-base; else bin=doppler; fi
    env $( [ $v != base ] && echo DOPPLER_COOP_TILE=$v ) $B/$bin bench --model $M/$1-$2.gguf --runs 3 --gen-tokens 64 --json > $R/$1-$2-$v.json 2>$R/err || tail -2 $R/err
    res $R/$1-$2-$v.json "$1 $2 $v pp/tg"
  done
done
tar -czf $OUT/redo.tar.gz -C $R .
echo "done after ${SECONDS}s"
