#!/bin/bash
# Key splits for pp512 steps: KeySplits' threshold (below_workgroups) and target raised by a temporary switch
# (EXP_SPLIT=below,target; unset = 128,256, which leaves pp512's 256 workgroups whole), pp512 at depth 4096,
# two interleaved rounds. Llama 1B (heads of 64: four subgroups a workgroup), Llama 8B and Qwen3 4B (heads of 128).
set -uo pipefail
source bench/device-env.sh
SHAPES="llama3.2-1b llama3.1-8b qwen3-4b"
synth $SHAPES
pp() {
  EXP_SPLIT=$4 timeout 90 $B/doppler bench --model $M/$1.gguf --runs 2 --depth $2 --gen-tokens 4 --json > $M/r.json 2>$M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$3 $1 d$2 EXP_SPLIT=$4 pp512', round(r['pp_tokens_per_second']['mean']))"
}
for round in r1 r2; do
  for s in $SHAPES; do for v in none 512,512 512,1024; do pp $s 4096 $round $v; done; done
done
echo "done after ${SECONDS}s"
