#!/bin/bash
# One call (H200), carrying .gl and .device-carry: doppler = a560c67 plus IQ4_XS's interleaved pair tables and a
# temporary run-time switch DOPPLER_SLICE_MB (the f16 weight slice of the prefill products, default 288 MiB;
# not committed); doppler-base = 7cd4671 (the done-when lease's build); km = kernels_matmul of the new build.
#   1. kernels_matmul on this GPU;
#   2. IQ4_XS decode, base against new, on a `doppler synth --weights IQ4_XS` Llama 3.2 3B (every layer
#      matrix IQ4_XS, as llama-quantize --pure): two interleaved rounds at depth 0, one at 4096;
#   3. pp512 at depth 4096 of Qwen3 4B and Llama 3.2 3B with f16 weight slices of 288 (default), 48 and 24 MiB:
#      whether slices that stay in the L2 cache beat one pass over the whole matrix.
set -uo pipefail
source bench/device-env.sh
( $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS --out $M/l3b-iq4xs.gguf \
    --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1; synth qwen3-4b llama3.2-3b ) > $M/synth.log 2>&1 &
echo "== km"; timeout 120 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
wait; cat $M/synth.log
echo "ready after ${SECONDS}s"
for round in r1 r2; do tg128 doppler-base l3b-iq4xs 0 $round; tg128 doppler l3b-iq4xs 0 $round; done
tg128 doppler-base l3b-iq4xs 4096 r1; tg128 doppler l3b-iq4xs 4096 r1
timeout 60 $B/doppler bench --model $M/l3b-iq4xs.gguf --runs 1 --prompt-tokens 64 --gen-tokens 64 --profile > $OUT/profile-l3b-iq4xs.txt 2>&1
timeout 60 $B/doppler-base bench --model $M/l3b-iq4xs.gguf --runs 1 --prompt-tokens 64 --gen-tokens 64 --profile > $OUT/profile-l3b-iq4xs-base.txt 2>&1
echo "iq4_xs after ${SECONDS}s"
pp() {  # pp SHAPE SLICE_MB ROUND
  DOPPLER_SLICE_MB=$2 timeout 90 $B/doppler bench --model $M/$1.gguf --runs 2 --depth 4096 --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $1 d4096 slice=${2:-288}MiB pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do for shape in qwen3-4b llama3.2-3b; do for mb in "" 48 24; do pp $shape "$mb" $round; done; done; done
echo "done after ${SECONDS}s"
