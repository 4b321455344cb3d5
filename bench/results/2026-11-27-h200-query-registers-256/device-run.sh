#!/bin/bash
# Query fragments in registers for heads of 256 too (the Gemma 3 shapes: 32 rows, 64-key tiles, where the
# staged query tile left 32-key tiles) against 9d68294 (doppler-base): the attention tests, then pp512 at depth
# 4096, two interleaved rounds, and one at depth 0.
set -uo pipefail
source bench/device-env.sh
echo "== kt attention"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
SHAPES="270m 1b 4b 12b"
synth $SHAPES
pp() {
  timeout 90 $B/$4 bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $1 d$2 $4 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do pp $s 4096 $round doppler-base; pp $s 4096 $round doppler; done
done
for s in $SHAPES; do pp $s 0 r1 doppler-base; pp $s 0 r1 doppler; done
echo "done after ${SECONDS}s"
