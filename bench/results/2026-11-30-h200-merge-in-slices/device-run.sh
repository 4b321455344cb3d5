#!/bin/bash
# Two temporary switches of one build (not committed), against the build as it is, on an idle H200:
#   DOPPLER_FUSED_MERGE: the decode attention's merge in the slices dispatch (the last workgroup of each
#     pack to finish merges the pack's heads), a dispatch less a layer where the packed kernel serves.
#   DOPPLER_RAW_SHUFFLE: IQ4_XS's table shuffles take the nibble shifted down but not masked (NVIDIA's
#     shuffle reads the index's low 5 bits and lanes 16-31 repeat the table).
# First the GPU tests with each switch on (kernels_transformer's attention cases five times, kernels_matmul),
# then tg128, two interleaved rounds, Llama 3.2 3B all IQ4_XS and the Q4_K_M mix, depth 0 and 4096.
set -uo pipefail
source bench/device-env.sh
synth llama3.2-3b llama3.2-1b qwen3-4b
[ -e $M/l3b-iq4xs.gguf ] || $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS \
  --out $M/l3b-iq4xs.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
for i in 1 2 3 4 5; do
  DOPPLER_FUSED_MERGE=1 timeout 100 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
done
DOPPLER_RAW_SHUFFLE=1 timeout 150 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
echo "tests done after ${SECONDS}s"
run() { env $1 timeout 60 $B/doppler bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 64 --gen-tokens 128 --json \
    > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$4 $2 d$3 $1 tg128', round(r['tg_tokens_per_second']['mean'], 1))"; }
for round in r1 r2; do
  for depth in 0 4096; do
    for v in NONE=1 DOPPLER_FUSED_MERGE=1 DOPPLER_RAW_SHUFFLE=1 "DOPPLER_FUSED_MERGE=1 DOPPLER_RAW_SHUFFLE=1"; do
      run "$v" l3b-iq4xs $depth $round
    done
    for v in NONE=1 DOPPLER_FUSED_MERGE=1; do run $v llama3.2-3b $depth $round; done
  done
  echo "round $round after ${SECONDS}s"
done
for file in llama3.2-1b qwen3-4b; do
  for depth in 0 4096; do for v in NONE=1 DOPPLER_FUSED_MERGE=1; do run $v $file $depth r1; done; done
done
echo "all after ${SECONDS}s"
