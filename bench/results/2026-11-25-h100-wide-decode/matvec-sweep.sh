#!/bin/bash
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
for v in default 64,1 64,2 64,4 128,1 128,2 128,4 256,1 256,2 256,4 512,1; do
  if [ $v = default ]; then unset DOPPLER_MATVEC_SHAPE; else export DOPPLER_MATVEC_SHAPE=$v; fi
  $B/decode_matvec --filter 8b --chain 100 --repeats 5 2>&1 | python3 -c "
import json,sys
for l in sys.stdin:
  try: r=json.loads(l)
  except Exception: print(l.strip()); continue
  print('$v', r['case'], round(r['microseconds_per_dispatch'],1), 'us', round(r['weight_gb_per_second']), 'GB/s')"
done
echo "done after ${SECONDS}s"
