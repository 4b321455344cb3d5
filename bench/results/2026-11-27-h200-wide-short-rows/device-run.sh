#!/bin/bash
# The wide Q8 product on short rows: EXP_SHORT=1 (a temporary switch, not in the tree) took rows of 16-32
# wide parts too, with 32 threads a workgroup; EXP_SHORT=0 was the tree at 2026-11-27-h200-merge-q8.
# dm = the decode_matvec bench binary.
set -uo pipefail
source bench/device-env.sh
for s in 0 1; do
  echo "== dm EXP_SHORT=$s"
  EXP_SHORT=$s timeout 60 $B/dm --filter lm_head --chain 100 --repeats 5 2>&1 | grep '^{' | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print('  %-28s %7.1f us %6.0f GB/s' % (r['case'], r['microseconds_per_dispatch'], r['weight_gb_per_second']))"
done
synth llama3.2-1b qwen2.5-1.5b
for d in 0 0 4096; do for m in llama3.2-1b qwen2.5-1.5b; do for s in 0 1; do EXP_SHORT=$s tg128 doppler $m $d short=$s; done; done; done
