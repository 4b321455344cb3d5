#!/bin/bash
# The speed matrix on the device: every `doppler synth` shape in llama.cpp's Q4_K_M mix, DOPPLER's bench and
# llama.cpp's llama-bench (Vulkan and CUDA) on the same files in one sitting, one JSON of ratios.
#
# Two `run` calls, carrying .gl, .llama-carry (../shared/device/llama-cpp/fetch.sh) and .device-carry/ holding
# bin/doppler or doppler.tar.xz (a stripped release build; each call unpacks it, since a call starts from the
# carried files only):
#   1. `bash bench/matrix.sh prepare`  starts the llama.cpp builds, synthesizes the models, waits for the builds
#   2. `bash bench/matrix.sh compare`  shape by shape runs DOPPLER's bench and
#      llama-bench (Vulkan, CUDA) back to back, and writes $OUT/matrix.json; it stops after COMPARE_SECONDS
#      (default 480) and a next call goes on with the shapes left.
# Tokenizers come from the tests/data/hf fixtures (padded to each shape's vocabulary by synth).
set -uo pipefail
SHAPES=(
  "gemma3 270m gemma3" "gemma3 1b gemma3" "gemma3 4b gemma3" "gemma3 12b gemma3"
  "llama llama3.2-1b llama3" "llama llama3.2-3b llama3" "llama llama3.1-8b llama3" "llama mistral-7b mistral"
  "qwen2 qwen2.5-1.5b qwen2" "qwen2 qwen2.5-7b qwen2" "qwen3 qwen3-4b qwen3" "phi3 phi3.5-mini phi3"
)
# ONLY="phi3.5-mini qwen3-4b": just those shapes.
if [ -n "${ONLY:-}" ]; then
  kept=()
  for shape in "${SHAPES[@]}"; do read -r _ size _ <<< "$shape"; [[ " $ONLY " == *" $size "* ]] && kept+=("$shape"); done
  SHAPES=("${kept[@]}")
fi
RUNS=${RUNS:-3}
# Tokens in the KV cache under each measurement (llama-bench's -d).
DEPTHS=${DEPTHS:-0 4096}
MODELS=/tmp/matrix
D=.device-carry/bin/doppler
if [ ! -x $D ]; then
  [ -f .device-carry/doppler.tar.xz ] || { echo "carry .device-carry/bin/doppler or .device-carry/doppler.tar.xz"; exit 1; }
  mkdir -p .device-carry/bin && tar -xJf .device-carry/doppler.tar.xz -C .device-carry/bin
fi
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json

prepare() {
  # A call that started the builds already (and ran other work while they went) does not start them twice.
  [ -e /tmp/l/build.sh ] || bash .llama-carry/build.sh
  mkdir -p $MODELS/doppler
  for shape in "${SHAPES[@]}"; do
    set -- $shape
    [ -f $MODELS/$2.gguf ] || $D synth --arch $1 --size $2 --out $MODELS/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  done
  for backend in vk cuda; do
    while [ ! -f /tmp/l/$backend.done ]; do sleep 5; done
    [ "$(cat /tmp/l/$backend.done)" = 0 ] || { tail -20 /tmp/l/$backend.log; exit 1; }
  done
  echo "llama.cpp built after ${SECONDS}s"
}

compare() {
  L=/tmp/l/llama.cpp
  mkdir -p $MODELS/llama $MODELS/doppler
  for shape in "${SHAPES[@]}"; do
    set -- $shape
    # (-s: a call that found no llama-bench leaves empty files.)
    [ -s $MODELS/llama/$2-cuda.json ] && continue
    [ $SECONDS -lt ${COMPARE_SECONDS:-480} ] || break
    for depth in $DEPTHS; do
      $D bench --model $MODELS/$2.gguf --runs $RUNS --depth $depth --json > $MODELS/doppler/$2-d$depth.json \
        2> $MODELS/doppler/$2.err || tail -3 $MODELS/doppler/$2.err
    done
    for backend in vk cuda; do
      LD_LIBRARY_PATH=$L/build-$backend/bin $L/build-$backend/bin/llama-bench -m $MODELS/$2.gguf -ngl 99 \
        -p 512 -n 128 -d ${DEPTHS// /,} -r $RUNS -o json > $MODELS/llama/$2-$backend.json 2> $MODELS/llama/$2-$backend.err \
        || tail -3 $MODELS/llama/$2-$backend.err
    done
  done
  DEVICE=$($D devices 2>/dev/null | head -1 | sed 's/^\[0\] //')
  python3 - "$MODELS" "$DEPTHS" "$DEVICE" "${SHAPES[@]}" > $OUT/matrix.json <<'PY'
import json, sys
models, depths, device = sys.argv[1], [int(d) for d in sys.argv[2].split()], sys.argv[3]
shapes = [s.split()[1] for s in sys.argv[4:]]
def llama(shape, backend, depth):
    try:
        rows = json.load(open(f"{models}/llama/{shape}-{backend}.json"))
    except (OSError, ValueError):
        return None
    pick = lambda p, n: next((r["avg_ts"] for r in rows
                              if r["n_prompt"] == p and r["n_gen"] == n and r.get("n_depth", 0) == depth), None)
    return {"pp512": pick(512, 0), "tg128": pick(0, 128)}
def ratio(a, b):
    return round(a / b, 3) if a and b else None
rows = []
for shape, depth in ((shape, depth) for shape in shapes for depth in depths):
    try:
        ours = json.load(open(f"{models}/doppler/{shape}-d{depth}.json"))
        doppler = {"pp512": ours["pp_tokens_per_second"]["mean"], "tg128": ours["tg_tokens_per_second"]["mean"]}
    except (OSError, ValueError, KeyError):
        doppler = None
    vk, cuda = llama(shape, "vk", depth), llama(shape, "cuda", depth)
    rows.append({
        "shape": shape, "depth": depth, "doppler": doppler, "llama_cpp_vulkan": vk, "llama_cpp_cuda": cuda,
        "decode_vs_cuda": ratio(doppler and doppler["tg128"], cuda and cuda["tg128"]),
        "prefill_vs_vulkan": ratio(doppler and doppler["pp512"], vk and vk["pp512"]),
    })
    r = rows[-1]
    print(f"{shape:14} d{depth:<5} doppler {doppler} vk {vk} cuda {cuda} decode/cuda {r['decode_vs_cuda']} prefill/vk {r['prefill_vs_vulkan']}", file=sys.stderr)
json.dump({"device": device, "rows": rows}, sys.stdout, indent=1)
PY
}

"$1"
