#!/bin/bash
# The tree's choice (the wide Q8 kernel for Q4_K and Q6_K rows of more than 32 wide parts) against the
# binary before it (doppler-base: the experiment build with its switch off), after the GPU tests.
set -uo pipefail
source bench/device-env.sh
echo "== kernels_matmul"; timeout 120 $B/km --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf_reference"; timeout 120 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
compare_tg128 llama3.1-8b llama3.2-1b llama3.2-3b qwen2.5-7b qwen2.5-1.5b qwen3-4b 4b phi3.5-mini mistral-7b
