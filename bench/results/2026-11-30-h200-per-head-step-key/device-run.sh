#!/bin/bash
# The per-head slices kernel (Gemma, Phi-3.5) with the change 1639b8c made to the packed one, behind a temporary
# switch (DOPPLER_STEP_IN_SHARED, not committed): the workgroup that stores the step's key and value keeps them
# in shared memory and reads them from there for that position, so its stores need no storageBarrier before the
# keys are read. kernels_transformer on the H200 with the switch, then tg128, same binary, two interleaved rounds.
set -uo pipefail
source bench/device-env.sh
synth 4b phi3.5-mini
echo "== kt"; DOPPLER_STEP_IN_SHARED=1 timeout 100 $B/kt --test-threads=1 2>&1 | grep -E "test result|panicked|got" | tail -4
run() { env $1 timeout 90 $B/doppler bench --model $M/$2.gguf --runs 2 --depth $3 --prompt-tokens 64 --gen-tokens 128 --json \
    > $M/bench.json 2> $M/bench.err || tail -3 $M/bench.err
  python3 -c "import json; r = json.load(open('$M/bench.json')); print('$4 $2 d$3 $1 tg128', round(r['tg_tokens_per_second']['mean'], 1))"; }
for round in r1 r2; do
  for depth in 0 4096; do
    for file in 4b phi3.5-mini; do run NONE=1 $file $depth $round; run DOPPLER_STEP_IN_SHARED=1 $file $depth $round; done
  done
done
echo "all after ${SECONDS}s"
