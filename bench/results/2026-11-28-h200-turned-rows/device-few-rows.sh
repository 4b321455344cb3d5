#!/bin/bash
# Decode products with few output rows (1,024-3,072): threads and rows per workgroup behind a temporary
# switch (EXP_MV=threads,rows,least_rows,most_rows), first on their own (benches/decode_matvec.rs), then
# tg128 of the shapes whose products have such rows.
set -uo pipefail
source bench/device-env.sh
mv $B/decode_matvec-* $B/decode_matvec
(synth qwen3-4b llama3.2-3b qwen2.5-1.5b llama3.1-8b > $M/synth.log 2>&1) &
for shape in base 128,4 64,4 64,2 32,4 256,4 256,2 128,1; do
  if [ $shape = base ]; then unset EXP_MV; else export EXP_MV=$shape,1024,3072; fi
  for f in "4b " "3b " "1.5b " "8b ffn_down" "8b attn_output q8"; do
    $B/decode_matvec --filter "$f" --chain 200 --repeats 7 | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); print('$shape', r['case'], round(r['microseconds_per_dispatch'],2), round(r['weight_gb_per_second']))"
  done
done
unset EXP_MV
wait; cat $M/synth.log
for round in r1 r2; do
  for shape in qwen3-4b llama3.2-3b qwen2.5-1.5b; do
    tg128 doppler $shape 0 "$round base"
    EXP_MV=128,4,1024,3072 tg128 doppler $shape 0 "$round 128,4"
    EXP_MV=64,4,1024,3072 tg128 doppler $shape 0 "$round 64,4"
  done
done
echo "done after ${SECONDS}s"
