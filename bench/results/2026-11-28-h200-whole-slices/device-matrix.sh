#!/bin/bash
# Slices of up to 288 MiB (Qwen2.5 7B's gate and up in one), doppler, against fe054fb (256 MiB), doppler-base:
# the products' tests, Qwen2.5 7B pp512 interleaved at depths 0 and 4096; then DOPPLER's side of the matrix with
# this build, every synth shape at depths 0 and 4096 (`RUNS=2 bash bench/matrix.sh compare`; no llama-bench in
# this lease: its columns come out empty).
set -uo pipefail
source bench/device-env.sh
echo "== km"; timeout 200 $B/km --test-threads=2 half gated stack split 2>&1 | grep -E "test result|panicked" | tail -3
M=/tmp/matrix; mkdir -p $M
synth 270m 1b 4b 12b llama3.2-1b llama3.2-3b llama3.1-8b mistral-7b qwen2.5-1.5b qwen2.5-7b qwen3-4b phi3.5-mini > /dev/null
echo "synthesized after ${SECONDS}s"
for round in r1 r2; do for d in 0 4096; do for b in doppler-base doppler; do
  timeout 90 $B/$b bench --model $M/qwen2.5-7b.gguf --runs 2 --depth $d --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$round qwen2.5-7b d$d $b pp512', round(r['pp_tokens_per_second']['mean']))"
done; done; done
RUNS=2 COMPARE_SECONDS=100000 bash bench/matrix.sh compare 2>&1 | grep -v "llama-bench\|No such file\|^$" | cut -c1-200
echo "done after ${SECONDS}s"
