#!/bin/bash
# Per-dispatch decode profiles of Llama 3.2 3B at depth 0 and 4096, Q4_K_M mix and all IQ4_XS (synthetic
# files), to size what one dispatch less a layer (the attention merge where one key slice serves a short
# context) would save. Binaries of cd647de (the GPU paths are those of 2dc8b33).
source bench/device-env.sh
synth llama3.2-3b
[ -e $M/l3b-iq4xs.gguf ] || $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS \
  --out $M/l3b-iq4xs.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
for file in llama3.2-3b l3b-iq4xs; do
  for depth in 0 4096; do
    timeout 120 $B/doppler bench --model $M/$file.gguf --runs 1 --depth $depth --prompt-tokens 64 \
      --gen-tokens 128 --profile > $OUT/profile-$file-d$depth.txt 2>&1
    head -20 $OUT/profile-$file-d$depth.txt
  done
done
