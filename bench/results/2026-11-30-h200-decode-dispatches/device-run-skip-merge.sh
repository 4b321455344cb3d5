#!/bin/bash
# Upper bound of one dispatch less a layer: tg128 with the decode attention's merge dispatch left out
# (DOPPLER_SKIP_MERGE, a temporary switch in record_split_attention, not committed: the output is wrong, the
# timing is what a merge-free decode step would cost), interleaved with the same binary as it is, two rounds.
source bench/device-env.sh
synth llama3.2-3b
[ -e $M/l3b-iq4xs.gguf ] || $B/doppler synth --arch llama --size llama3.2-3b --weights IQ4_XS \
  --out $M/l3b-iq4xs.gguf --tokenizer-from tests/data/hf/llama3/model.gguf 2>&1 | tail -1
run() { env $1 timeout 60 $B/doppler bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 64 --gen-tokens 128 --json \
    > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$4 $2 d$3 $1 tg128', round(r['tg_tokens_per_second']['mean'], 1))"; }
for round in r1 r2; do
  for file in l3b-iq4xs llama3.2-3b; do
    for depth in 0 4096; do
      run NONE=1 $file $depth $round; run DOPPLER_SKIP_MERGE=1 $file $depth $round
    done
  done
done
