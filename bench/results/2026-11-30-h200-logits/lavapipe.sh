#!/bin/bash
# The same logits on lavapipe (no GPU; its f32 kernels), from the repository root: the synthetic files written
# exactly as bench/device-env.sh's synth does (their sha256 is printed to check they are the H200's), then
# `doppler logits` on each, lavapipe-SHAPE.json beside this script.
set -euo pipefail
D=bench/results/2026-11-30-h200-logits
M=${MODELS:-/tmp/logits-models}
mkdir -p $M
synth_one() {
  [ -e $M/$1.gguf ] || target/release/doppler synth --arch $2 --size $1 --out $M/$1.gguf --tokenizer-from tests/data/hf/$3/model.gguf | tail -1
  sha256sum $M/$1.gguf | cut -c1-16
}
synth_one 270m gemma3 gemma3
synth_one llama3.2-1b llama llama3
synth_one qwen2.5-1.5b qwen2 qwen2
for shape in 270m llama3.2-1b qwen2.5-1.5b; do
  target/release/doppler logits --model $M/$shape.gguf --prompt "$(cat $D/prompt.txt)" --top 10 > $D/lavapipe-$shape.json
done
