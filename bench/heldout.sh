#!/bin/bash
# Held-out files on the device: llama.cpp's own llama-quantize makes mixes the project never synthesizes, from
# `doppler synth --weights F16` bases (sizes the matrix lacks among them), and DOPPLER's bench and llama-bench
# (Vulkan, CUDA) run each at depths 0 and 4096; $OUT/heldout.json of ratios.
#
# Needs the builds of bench/matrix.sh prepare (/tmp/l/llama.cpp/build-{vk,cuda}), $B/doppler
# (bench/device-env.sh) and the tokenizer fixtures. Two steps, each its own call or both in one:
#   `bash bench/heldout.sh bases`  the F16 bases (minutes of CPU: run it while llama.cpp builds)
#   `bash bench/heldout.sh run`    llama-quantize, then the benches; stops starting files after HELDOUT_SECONDS
#                                  (default 540)
# BASES and MIXES come from the environment, as "name arch size tokenizer;..." and "name TYPE;...".
set -uo pipefail
source bench/device-env.sh > /dev/null
H=/tmp/h
L=/tmp/l/llama.cpp
IFS=';' read -ra BASES <<< "${BASES:-l3b llama llama3.2-3b llama3;q15 qwen2 qwen2.5-1.5b qwen2;g1b gemma3 1b gemma3;s135 llama smollm2-135m mistral}"
IFS=';' read -ra MIXES <<< "${MIXES:-l3b Q4_K_S;l3b Q5_K_M;l3b IQ4_XS;q15 Q6_K;g1b Q5_K_S;s135 Q8_0}"

bases() {
  mkdir -p $H
  for base in "${BASES[@]}"; do
    set -- $base
    [ -f $H/$1-f16.gguf ] || $B/doppler synth --arch $2 --size $3 --weights F16 --out $H/$1-f16.gguf \
      --tokenizer-from tests/data/hf/$4/model.gguf 2>&1 | tail -1
  done
}

run() {
  # The matrix's builds made llama-bench only.
  [ -x $L/build-cuda/bin/llama-quantize ] || cmake --build $L/build-cuda -j16 --target llama-quantize > /tmp/l/quantize.log 2>&1 \
    || { tail -20 /tmp/l/quantize.log; exit 1; }
  echo "llama-quantize built after ${SECONDS}s"
  bases
  mkdir -p $H/out
  for mix in "${MIXES[@]}"; do
    set -- $mix; f=$H/$1-$2.gguf
    [ -f $f ] || LD_LIBRARY_PATH=$L/build-cuda/bin $L/build-cuda/bin/llama-quantize $H/$1-f16.gguf $f $2 > $H/q.log 2>&1 \
      || { tail -5 $H/q.log; continue; }
  done
  echo "quantized after ${SECONDS}s"
  for mix in "${MIXES[@]}"; do
    set -- $mix; name=$1-$2; f=$H/$name.gguf
    [ -f $f ] || continue
    for depth in 0 4096; do
      $B/doppler bench --model $f --runs 2 --depth $depth --json > $H/out/doppler-$name-d$depth.json 2> $H/d.err || tail -3 $H/d.err
    done
    for backend in vk cuda; do
      LD_LIBRARY_PATH=$L/build-$backend/bin $L/build-$backend/bin/llama-bench -m $f -ngl 99 -p 512 -n 128 -d 0,4096 \
        -r 2 -o json > $H/out/llama-$backend-$name.json 2> $H/l.err || tail -3 $H/l.err
    done
    [ $SECONDS -lt ${HELDOUT_SECONDS:-540} ] || { echo "stopping at ${SECONDS}s"; break; }
  done
  python3 - $H/out "${MIXES[@]}" > $OUT/heldout.json <<'PY'
import json, sys
out, mixes = sys.argv[1], [m.replace(" ", "-") for m in sys.argv[2:]]
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
def ratio(a, b):
    return round(a / b, 3) if a and b else None
rows = []
for name in mixes:
    llama = {b: load(f"{out}/llama-{b}-{name}.json") or [] for b in ("vk", "cuda")}
    for depth in (0, 4096):
        ours = load(f"{out}/doppler-{name}-d{depth}.json")
        doppler = ours and {"pp512": ours["pp_tokens_per_second"]["mean"], "tg128": ours["tg_tokens_per_second"]["mean"],
                            "quantization": ours.get("quantization")}
        def pick(b, p, n):
            return next((r["avg_ts"] for r in llama[b]
                         if r["n_prompt"] == p and r["n_gen"] == n and r.get("n_depth", 0) == depth), None)
        vk = {"pp512": pick("vk", 512, 0), "tg128": pick("vk", 0, 128)}
        cuda = {"pp512": pick("cuda", 512, 0), "tg128": pick("cuda", 0, 128)}
        row = {"file": name, "depth": depth, "doppler": doppler, "llama_cpp_vulkan": vk, "llama_cpp_cuda": cuda,
               "decode_vs_cuda": ratio(doppler and doppler["tg128"], cuda["tg128"]),
               "prefill_vs_vulkan": ratio(doppler and doppler["pp512"], vk["pp512"])}
        rows.append(row)
        print(f"{name:12} d{depth:<5} doppler {doppler} vk {vk} cuda {cuda} decode/cuda {row['decode_vs_cuda']} prefill/vk {row['prefill_vs_vulkan']}", file=sys.stderr)
json.dump({"rows": rows}, sys.stdout, indent=1)
PY
  echo "done after ${SECONDS}s"
}
"$1"
