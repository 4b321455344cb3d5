#!/bin/bash
# Carry .gl (../shared/device/fetch-vulkan-loader.sh) and .device-carry/ holding bin/doppler (a stripped
# release build) and gemma3-tokenizer.gguf (the tokenizer keys of the default Gemma model).
# Runs on the device: synthesize models, cross-check logits, benchmark.
set -x
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.device-carry/bin/doppler
$D devices
$D synth --arch gemma3 --size 270m --out /tmp/g270m.gguf --tokenizer-from .device-carry/gemma3-tokenizer.gguf
$D synth --arch gemma3 --size 1b --out /tmp/g1b.gguf --tokenizer-from .device-carry/gemma3-tokenizer.gguf
sha256sum /tmp/g270m.gguf | tee $OUT/synth-sha.txt
$D logits --model /tmp/g270m.gguf --prompt "The quick brown fox jumps over the lazy dog" --top 10 > $OUT/logits-270m.json
for m in g270m g1b; do
  $D bench --model /tmp/$m.gguf --runs ${RUNS:-3} --json ${PROFILE:+--profile} ${STEPS:+--steps-per-submit $STEPS} > $OUT/bench-$m.json
  python3 -c "import json;r=json.load(open('$OUT/bench-$m.json'));print('$m', 'pp', r['pp_tokens_per_second']['mean'], 'tg', r['tg_tokens_per_second']['mean']); [print(k) for k in r['kernels_per_token'][:12]]"
done
