#!/bin/bash
# The attention merge writing its output in Q8 form for the output projection (doppler) against a20f862
# (doppler-base: the projection reads the f32 output, or a quantization of its own for >= 16 MiB of
# weights), after the GPU attention tests and the transformers fixtures.
set -uo pipefail
source bench/device-env.sh
echo "== kernels_transformer"; timeout 150 $B/kt --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
echo "== hf_reference"; timeout 120 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
compare_tg128 llama3.1-8b llama3.2-1b llama3.2-3b qwen2.5-7b qwen2.5-1.5b qwen3-4b 4b phi3.5-mini mistral-7b 270m 1b
