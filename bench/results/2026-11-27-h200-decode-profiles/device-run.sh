#!/bin/bash
# Kernel tables (`doppler bench --profile`) of the rows still under issue 17's targets, at f1d3e1e: Qwen3 4B decode (0.93 of llama.cpp CUDA), Llama 3B decode at depth 4096
# (0.94) against Llama 8B's (1.10), and Llama 1B prefill at depth 4096 (0.78 of llama.cpp Vulkan).
set -uo pipefail
source bench/device-env.sh
synth qwen3-4b llama3.2-3b llama3.1-8b llama3.2-1b
prof() {
  timeout 120 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --prompt-tokens $3 --gen-tokens $4 --profile \
    > $OUT/profile-$1-d$2-p$3-g$4.txt 2>&1 || tail -3 $OUT/profile-$1-d$2-p$3-g$4.txt
  echo "$1 d$2 p$3 g$4"; grep -iE "tokens/s|t/s" $OUT/profile-$1-d$2-p$3-g$4.txt | head -3
}
prof qwen3-4b 0 64 128
prof qwen3-4b 4096 64 128
prof llama3.2-3b 4096 64 128
prof llama3.1-8b 4096 64 128
prof llama3.2-1b 4096 512 4
prof llama3.2-1b 0 512 4
echo "done after ${SECONDS}s"
