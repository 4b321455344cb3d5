#!/bin/bash
# Qwen3 4B's attention slices cost twice Llama 8B's at depth 0 (same heads): which part of the q/k step they
# take over does it. Temporary switches (timing only; the values are wrong under the first three):
# EXP_SKIP_NORM (no norm reduction), EXP_NORM_CONST (one norm weight for all dimensions), EXP_NO_NEOX
# (pairs (2i, 2i+1)), EXP_NO_FUSE (the q/k step as its own dispatch before the slices).
set -uo pipefail
source bench/device-env.sh
synth qwen3-4b llama3.1-8b > /dev/null
prof() { timeout 90 $B/doppler bench --model $M/$1.gguf --runs 1 --prompt-tokens 64 --gen-tokens 128 --profile 2>&1 | sed -n '3p;7,12p' | grep -v "ffn\|attn_output"; }
for v in base EXP_SKIP_NORM EXP_NORM_CONST EXP_NO_NEOX EXP_NO_FUSE; do
  echo "== $v"; env $v=1 bash -c "$(declare -f prof); B=$B M=$M prof qwen3-4b"
done
echo "== llama 8b EXP_NO_FUSE"; EXP_NO_FUSE=1 prof llama3.1-8b
for round in r1 r2; do
  for v in base EXP_NORM_CONST EXP_NO_NEOX EXP_NO_FUSE; do env $v=1 bash -c "$(declare -f tg128); B=$B M=$M tg128 doppler qwen3-4b 0 '$round $v'"; done
done
echo "done after ${SECONDS}s"
