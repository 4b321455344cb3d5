#!/bin/bash
# Query rows per workgroup of the staged tensor-core prefill attention: doppler (32 rows for heads over 64),
# doppler-v2 (64 rows up to heads of 128, 32-key tiles there), doppler-v3 (16 rows for heads over 64); the
# attention tests of each variant first (kt-v2, kt-v3), then pp512 at depth 4096, interleaved.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
for t in kt-v2 kt-v3; do
  echo "== $t"; timeout 100 $B/$t --test-threads=1 attention 2>&1 | grep -E "^test |test result|panicked" | tail -6
done
for spec in "llama llama3.1-8b llama3" "phi3 phi3.5-mini phi3" "gemma3 4b gemma3"; do
  set -- $spec
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for round in 1 2; do
  for m in llama3.1-8b phi3.5-mini 4b; do
    for bin in doppler doppler-v2 doppler-v3; do
      timeout 60 $B/$bin bench --model $M/$m.gguf --runs 2 --depth 4096 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
      python3 -c "import json;r=json.load(open('$M/r.json'));print('round $round $m $bin pp512@d4096', round(r['pp_tokens_per_second']['mean']))"
    done
  done
done
echo "done after ${SECONDS}s"
