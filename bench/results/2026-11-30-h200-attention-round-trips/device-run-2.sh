#!/bin/bash
# Second build: the merge keeps its old math (stats, max, weights) but loads each thread's slices' values
# before the stats arrive (the flash-style merge of the first build failed kernels_transformer's decode case
# on the H200: `run.log`). A third temporary switch, DOPPLER_UNPACK_NIBBLES: IQ4_XS's nibbles taken with
# two masks and unpack4xU8 (byte extracts) and no mask at the shuffle where 16 lanes hold the table.
set -uo pipefail
source bench/device-env.sh
synth llama3.2-3b
[ -e $M/l3b-iq4xs.gguf ] || $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS \
  --out $M/l3b-iq4xs.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
echo "== kt"; timeout 100 $B/kt --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED|got" | tail -5
echo "== km unpack"; DOPPLER_UNPACK_NIBBLES=1 timeout 100 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
run() { env $1 timeout 60 $B/$2 bench --model $M/$3.gguf --runs 2 --depth $4 --prompt-tokens 64 --gen-tokens 128 --json \
    > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$5 $3 d$4 $2 $1 tg128', round(r['tg_tokens_per_second']['mean'], 1))"; }
for round in r1 r2; do
  for depth in 0 4096; do
    run NONE=1 doppler-base llama3.2-3b $depth $round; run NONE=1 doppler llama3.2-3b $depth $round
    run NONE=1 doppler-base l3b-iq4xs $depth $round; run NONE=1 doppler l3b-iq4xs $depth $round
    run DOPPLER_UNPACK_NIBBLES=1 doppler l3b-iq4xs $depth $round
  done
done
echo "all after ${SECONDS}s"
