#!/bin/bash
# The committed prefill attention on the H200: the attention kernel tests (f64 reference) and the transformers
# fixtures, then DOPPLER's side of the matrix, every synth shape at depths 0 and 4096
# (`RUNS=2 bash bench/matrix.sh compare`, no llama-bench in this lease: its columns come out empty).
set -uo pipefail
source bench/device-env.sh
echo "== kt"; timeout 200 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf"; timeout 150 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked|FAILED" | tail -3
M=/tmp/matrix; mkdir -p $M
synth 270m 1b 4b 12b llama3.2-1b llama3.2-3b llama3.1-8b mistral-7b qwen2.5-1.5b qwen2.5-7b qwen3-4b phi3.5-mini > /dev/null
echo "synthesized after ${SECONDS}s"
RUNS=2 COMPARE_SECONDS=100000 bash bench/matrix.sh compare 2>&1 | grep -v "llama-bench\|No such file\|^$" | cut -c1-200
echo "done after ${SECONDS}s"
