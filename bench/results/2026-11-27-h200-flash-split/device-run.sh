#!/bin/bash
# Split-KV prefill attention, second run (run.log): doppler (branch flash-split: a step of fewer blocks × heads
# than DOPPLER_FLASH_TARGET workgroups, default 256, splits its blocks' keys) against doppler-base (main at
# 6812d1c). The tensor-core attention tests (kt: kernels_transformer, with the deep split cases) and the
# hf_reference fixtures of the new build first, then prefill tokens/s (`doppler bench --runs 2 --gen-tokens 4`)
# at depth 4096 of 64-token steps (the target varied: 128, 512), of 128 and of 512, and of 512 at depth 0.
# The binaries travel in .device-parts/flash-split/doppler.tar.xz with this script (carry it and .gl).
set -uo pipefail
P=.device-parts/flash-split
source bench/device-env.sh 2>/dev/null
tar -xJf $P/doppler.tar.xz -C $B
cat $P/BUILD 2>/dev/null
# The test binaries look for the repository where they were built.
[ -e /work/wt-split ] || ln -s "$PWD" /work/wt-split
export XDG_RUNTIME_DIR=/tmp
L=${OUT:-/tmp}
echo "== kt attention"
timeout 120 $B/kt --test-threads=1 attention > $L/kt.log 2>&1
grep -E "^test |test result" $L/kt.log; grep -A4 panicked $L/kt.log | head -20
echo "== hf"
timeout 150 $B/hf --test-threads=1 > $L/hf.log 2>&1
grep -E "^test |test result" $L/hf.log; grep -A4 panicked $L/hf.log | head -20
echo "== synth after ${SECONDS}s"
SHAPES="llama3.1-8b llama3.2-1b qwen3-4b phi3.5-mini 4b"
synth $SHAPES
# pp BINARY SHAPE DEPTH TOKENS LABEL [ENV...]: one line of prefill tokens/s (steps of TOKENS tokens).
pp() {
  local bin=$1 shape=$2 depth=$3 tokens=$4 label=$5; shift 5
  env "$@" timeout 90 $B/$bin bench --model $M/$shape.gguf --runs 2 --depth $depth --prompt-tokens $tokens \
    --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$label $shape d$depth $bin ${*:-default} pp$tokens', round(r['pp_tokens_per_second']['mean']))"
}
echo "== benches after ${SECONDS}s"
for s in $SHAPES; do
  pp doppler-base $s 4096 64 r1; pp doppler $s 4096 64 r1
  pp doppler $s 4096 64 v DOPPLER_FLASH_TARGET=128; pp doppler $s 4096 64 v DOPPLER_FLASH_TARGET=512
done
for s in $SHAPES; do pp doppler-base $s 4096 128 r1; pp doppler $s 4096 128 r1; done
for s in $SHAPES; do pp doppler-base $s 4096 512 r1; pp doppler $s 4096 512 r1; done
for s in $SHAPES; do pp doppler-base $s 0 512 r1; pp doppler $s 0 512 r1; done
echo "done after ${SECONDS}s"
