#!/bin/bash
# The decode attention with fewer dependent round trips to memory (this build, `doppler`) against the build
# before it (`doppler-base`, d9aac65 plus temporary switches that are off here), on an idle H200:
#   - the slices kernel loads its first round's key and value rows before it stages and rotates the queries,
#     and each round the next round's rows before working on its own; the workgroup that stores the step's
#     key and value takes them from registers for that position instead of reading the cache back behind a
#     device-scope barrier;
#   - the merge loads each slice's stats and values in one round and merges them flash style (running max),
#     then merges its thread groups, instead of stats, barriers, then values.
# DOPPLER_RAW_SHUFFLE (temporary switch, both builds): IQ4_XS's shuffles take the nibble unmasked.
# First the GPU tests of this build (kernels_transformer, hf_reference, kernels_matmul), then tg128 interleaved
# (a second round for Llama 3.2 3B), and one profile each of Llama 3.2 3B IQ4_XS at depth 0.
set -uo pipefail
source bench/device-env.sh
synth llama3.2-3b llama3.2-1b qwen3-4b qwen2.5-7b
[ -e $M/l3b-iq4xs.gguf ] || $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS \
  --out $M/l3b-iq4xs.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
for t in kt hf km; do
  echo "== $t"; timeout 150 $B/$t --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -5
done
echo "tests done after ${SECONDS}s"
run() { env $1 timeout 60 $B/$2 bench --model $M/$3.gguf --runs 2 --depth $4 --prompt-tokens 64 --gen-tokens 128 --json \
    > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$5 $3 d$4 $2 $1 tg128', round(r['tg_tokens_per_second']['mean'], 1))"; }
for round in r1 r2; do
  files="l3b-iq4xs llama3.2-3b llama3.2-1b qwen3-4b qwen2.5-7b"
  [ $round = r2 ] && files="l3b-iq4xs llama3.2-3b"
  for depth in 0 4096; do
    for file in $files; do
      run NONE=1 doppler-base $file $depth $round; run NONE=1 doppler $file $depth $round
    done
    run DOPPLER_RAW_SHUFFLE=1 doppler l3b-iq4xs $depth $round
  done
  echo "round $round after ${SECONDS}s"
done
for b in doppler-base doppler; do
  timeout 60 $B/$b bench --model $M/l3b-iq4xs.gguf --runs 1 --prompt-tokens 64 --gen-tokens 128 --profile 2>&1 | head -14 > $OUT/profile-$b.txt
done
echo "all after ${SECONDS}s"
