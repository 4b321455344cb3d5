#!/bin/bash
# Where prefill and decode time go at depth 4096 on the Llama shapes (bench --profile now profiles at --depth).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
for spec in "llama llama3.2-1b llama3" "llama llama3.1-8b llama3"; do
  set -- $spec
  [ -f $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
for spec in "llama3.2-1b 0" "llama3.2-1b 4096" "llama3.1-8b 0" "llama3.1-8b 4096"; do
  set -- $spec
  timeout 150 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --profile --json > $OUT/profile-$1-d$2.json 2>$M/err || tail -3 $M/err
  python3 - $OUT/profile-$1-d$2.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
print(sys.argv[1].split('/')[-1], r['adapter'], 'pp', round(r['pp_tokens_per_second']['mean']), 'tg', round(r['tg_tokens_per_second']['mean'],1))
for name, unit in (('kernels_per_prefill', 'us/prefill'), ('kernels_per_token', 'us/token')):
    rows = r[name]
    total = sum(k['microseconds_per_token'] for k in rows)
    print('  %s total %.0f %s:' % (name, total, unit), ', '.join('%s %.0f (%.0f%%)' % (k['kernel'], k['microseconds_per_token'], 100*k['share']) for k in rows[:7]))
PY
done
echo "done after ${SECONDS}s"
