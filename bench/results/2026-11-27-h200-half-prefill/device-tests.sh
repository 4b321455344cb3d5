#!/bin/bash
# Beside `bench/matrix.sh prepare` (same call, after it has unpacked .device-carry): the GPU kernel tests
# of the measured build, one thread each (see the 2026-11-26 note on parallel GPU tests on this driver).
set -uo pipefail
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
for t in kernels_matmul kernels_transformer; do
  echo "== $t"; timeout 300 .device-carry/bin/$t --test-threads=1 2>&1 | grep -E "^test |test result|panicked|failures" | tail -40
done
echo "tests done after ${SECONDS}s"
