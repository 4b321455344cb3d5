#!/bin/bash
# Qwen 2's q/k/v biases added by the decode products as they store (doppler) against three row additions
# a layer (doppler-base: the EXP_SHORT build of ../2026-11-27-h200-wide-short-rows/ with the switch on, the
# tree before this change), after the transformers fixtures.
set -uo pipefail
source bench/device-env.sh
export EXP_SHORT=1
echo "== hf_reference"; timeout 120 $B/hf --test-threads=1 2>&1 | grep -E "test result|panicked" | tail -3
compare_tg128 qwen2.5-1.5b qwen2.5-7b
