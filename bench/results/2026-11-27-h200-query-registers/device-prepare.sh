#!/bin/bash
# Call 1: llama.cpp's builds started (detached); while they build, the tensor-core kernel tests with the query
# fragments in registers (the build's default) and with the staged query tile (temporary switch EXP_QREG=0),
# hf_reference; then `bench/matrix.sh prepare` synthesizes every shape and waits for the builds.
set -uo pipefail
bash .llama-carry/build.sh
source bench/device-env.sh
for q in 1 0; do
  echo "== kt attention EXP_QREG=$q"
  EXP_QREG=$q timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
done
echo "== km"; timeout 200 $B/km --test-threads=1 half gated dequantize parts 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
bash bench/matrix.sh prepare
echo "done after ${SECONDS}s"
