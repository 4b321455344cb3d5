#!/bin/bash
# pp512 with the query fragments in registers (EXP_QREG=1) and with the staged
# query tile (EXP_QREG=0), one binary, the matrix's shapes (synthesized here), two interleaved rounds at depth 4096, one at depth 0.
set -uo pipefail
source bench/device-env.sh
SHAPES="llama3.1-8b llama3.2-1b llama3.2-3b qwen3-4b qwen2.5-1.5b"
synth $SHAPES
pp() {
  EXP_QREG=$4 timeout 90 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $1 d$2 EXP_QREG=$4 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do pp $s 4096 $round 0; pp $s 4096 $round 1; done
done
for s in $SHAPES; do pp $s 0 r1 0; pp $s 0 r1 1; done
echo "done after ${SECONDS}s"
