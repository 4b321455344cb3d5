#!/bin/bash
# Held-out files: llama.cpp's own llama-quantize makes mixes the project does not synthesize from F16 synth
# models; DOPPLER and llama-bench (CUDA, Vulkan) run each. `prepare` starts the builds and writes the F16 files;
# `compare` (same warm machine) quantizes and benches.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/ld; [ -x $B/doppler ] || { mkdir -p $B; tar -xJf .device-carry/load.tar.xz -C $B; }
M=/tmp/h; mkdir -p $M
L=/tmp/l/llama.cpp
prepare() {
  rm -rf /tmp/m /tmp/matrix
  bash .llama-carry/build.sh
  $B/doppler synth --arch llama --size llama3.2-3b --weights F16 --out $M/l3b-f16.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
  $B/doppler synth --arch qwen2 --size qwen2.5-1.5b --weights F16 --out $M/q15-f16.gguf --tokenizer-from tests/data/hf/qwen2/model.gguf 2>&1 | tail -1
  for backend in vk cuda; do
    while [ ! -f /tmp/l/$backend.done ]; do [ $SECONDS -lt 570 ] || { echo "builds still running"; exit 0; }; sleep 5; done
    [ "$(cat /tmp/l/$backend.done)" = 0 ] || { tail -20 /tmp/l/$backend.log; exit 1; }
  done
  echo "llama.cpp built after ${SECONDS}s"
}
compare() {
  for spec in "l3b Q4_K_S" "l3b Q5_K_M" "l3b IQ4_XS" "q15 Q6_K" "q15 Q8_0"; do
    set -- $spec; f=$M/$1-$2.gguf
    [ -f $f ] || LD_LIBRARY_PATH=$L/build-cuda/bin $L/build-cuda/bin/llama-quantize $M/$1-f16.gguf $f $2 > $M/q.log 2>&1 || { tail -5 $M/q.log; continue; }
    $B/doppler bench --model $f --runs 2 --json > $OUT/doppler-$1-$2.json 2> $M/d.err || tail -3 $M/d.err
    for backend in vk cuda; do
      LD_LIBRARY_PATH=$L/build-$backend/bin $L/build-$backend/bin/llama-bench -m $f -ngl 99 -p 512 -n 128 -r 2 -o json > $OUT/llama-$backend-$1-$2.json 2> $M/l.err || tail -3 $M/l.err
    done
    python3 - $OUT $1-$2 <<'PY'
import json, sys
out, name = sys.argv[1], sys.argv[2]
d = json.load(open(f"{out}/doppler-{name}.json"))
def ll(b):
    rows = json.load(open(f"{out}/llama-{b}-{name}.json"))
    pick = lambda p, n: next(r["avg_ts"] for r in rows if r["n_prompt"] == p and r["n_gen"] == n)
    return pick(512, 0), pick(0, 128)
vk, cu = ll("vk"), ll("cuda")
pp, tg = d["pp_tokens_per_second"]["mean"], d["tg_tokens_per_second"]["mean"]
print(f"{name:12} {d['quantization']:10} doppler {pp:8.0f} / {tg:6.1f}  vk {vk[0]:8.0f} / {vk[1]:6.1f}  cuda {cu[0]:8.0f} / {cu[1]:6.1f}  decode/cuda {tg/cu[1]:.2f}  prefill/vk {pp/vk[0]:.2f}")
PY
    [ $SECONDS -lt 520 ] || { echo "stopping at ${SECONDS}s"; break; }
  done
  echo "done after ${SECONDS}s"
}
"$1"
