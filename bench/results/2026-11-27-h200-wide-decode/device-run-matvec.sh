#!/bin/bash
# Llama 3.1 8B's decode products alone (benches/decode_matvec.rs), the wide Q8 kernel against the
# word-wide one through a temporary switch (EXP_WIDE: 1 both types, 4 Q4_K only; EXP_WG and EXP_ROWS
# forced the workgroup's threads and rows; not in the tree), then tg128 of every K-quant shape at
# depth 0 with each switch. dm = the decode_matvec bench binary, km = the kernels_matmul tests.
set -uo pipefail
source bench/device-env.sh
echo "== kernels_matmul, wide"; EXP_WIDE=1 timeout 120 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
run_dm() {
  echo "== dm $*"
  env "$@" timeout 60 $B/dm --filter 8b --chain 100 --repeats 5 2>&1 | grep '^{' | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print('  %-26s %7.1f us %6.0f GB/s' % (r['case'], r['microseconds_per_dispatch'], r['weight_gb_per_second']))"
}
run_dm EXP_WIDE=0
run_dm EXP_WIDE=1
run_dm EXP_WIDE=1 EXP_WG=64
run_dm EXP_WIDE=1 EXP_WG=256
run_dm EXP_WIDE=1 EXP_ROWS=2
run_dm EXP_WIDE=1 EXP_ROWS=1
shapes="llama3.1-8b llama3.2-1b llama3.2-3b qwen2.5-7b qwen2.5-1.5b qwen3-4b 4b phi3.5-mini mistral-7b"
synth $shapes
for shape in $shapes; do
  for wide in 0 4 1; do EXP_WIDE=$wide tg128 doppler $shape 0 "wide=$wide"; done
done
