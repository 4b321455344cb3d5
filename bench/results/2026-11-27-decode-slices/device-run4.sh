#!/bin/bash
# Packed decode slices with their knobs (a temporary build reading DOPPLER_X_* variables): default (q/k step
# fused, 512 workgroups aimed for, at most 128 slices, 128 threads), unfused (the q/k step as its own
# dispatch), wg256, fewer slices (256 workgroups, at most 64 slices); against doppler-base.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/doppler.tar.xz -C $B
M=/tmp/m; mkdir -p $M
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== kernels_transformer"; timeout 150 $B/kt --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -4
for spec in "llama llama3.1-8b llama3" "llama llama3.2-1b llama3" "gemma3 270m gemma3" "gemma3 4b gemma3"; do
  set -- $spec
  [ -e $M/$2.gguf ] || $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
done
bench() { # name env... -- bin model depth
  local name=$1; shift; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 60 $B/$1 bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 64 --gen-tokens 128 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$2 d$3 $name tg128', round(r['tg_tokens_per_second']['mean'],1))"
}
for depth in 4096 0; do
  for m in llama3.1-8b llama3.2-1b 270m 4b; do
    bench base X=0 -- doppler-base $m $depth
    bench default X=0 -- doppler $m $depth
    bench unfused DOPPLER_X_UNFUSED=1 -- doppler $m $depth
    bench wg256 DOPPLER_X_WG=256 -- doppler $m $depth
    bench fewer DOPPLER_X_TARGET=256 DOPPLER_X_MAXSLICES=64 -- doppler $m $depth
  done
  echo "depth $depth done after ${SECONDS}s"
done
for v in "default X=0" "unfused DOPPLER_X_UNFUSED=1"; do
  set -- $v
  for m in 270m llama3.1-8b; do
    env $2 timeout 60 $B/doppler bench --model $M/$m.gguf --runs 1 --depth 4096 --prompt-tokens 64 --gen-tokens 32 --profile --json > $OUT/profile-$1-$m-d4096.json 2>$M/err || tail -3 $M/err
    python3 -c "
import json;r=json.load(open('$OUT/profile-$1-$m-d4096.json'))
print('$1 $m', [(k['kernel'], round(k['microseconds_per_token'])) for k in r['kernels_per_token'] if 'att' in k['kernel'] or 'qk' in k['kernel'] or 'rope' in k['kernel']])"
  done
done
echo "done after ${SECONDS}s"
