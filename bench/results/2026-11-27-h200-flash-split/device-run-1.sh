#!/bin/bash
# First run (run-1.log), of the first design: every step split to about DOPPLER_FLASH_TARGET workgroups at
# the session's largest step. Split-KV prefill attention: doppler (branch flash-split) against doppler-base (main at 6812d1c). The
# tensor-core attention tests (kt: kernels_transformer, with the deep split cases) and the hf_reference
# fixtures of the new build first, then pp512 (`doppler bench --runs 2 --gen-tokens 4`) at depth 4096 in two
# interleaved rounds and at depth 0 in one, and the split constants varied through the build's temporary
# switches (DOPPLER_FLASH_TARGET: workgroups aimed for, default 1024; DOPPLER_FLASH_MIN_TILES: fewest
# key tiles a split, default 8).
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
# pp BINARY SHAPE DEPTH LABEL [ENV...]: one line of prefill tokens/s.
pp() {
  local bin=$1 shape=$2 depth=$3 label=$4; shift 4
  env "$@" timeout 60 $B/$bin bench --model $M/$shape.gguf --runs 2 --depth $depth --gen-tokens 4 --json \
    > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$label $shape d$depth $bin ${*:-default} pp512', round(r['pp_tokens_per_second']['mean']))"
}
echo "== benches after ${SECONDS}s"
for round in r1 r2; do
  for s in $SHAPES; do pp doppler-base $s 4096 $round; pp doppler $s 4096 $round; done
done
for s in $SHAPES; do
  pp doppler $s 4096 v DOPPLER_FLASH_TARGET=512
  pp doppler $s 4096 v DOPPLER_FLASH_TARGET=2048
done
pp doppler 4b 4096 v DOPPLER_FLASH_MIN_TILES=16
for s in $SHAPES; do
  pp doppler-base $s 0 r1; pp doppler $s 0 r1; pp doppler $s 0 v DOPPLER_FLASH_MIN_TILES=16
done
echo "done after ${SECONDS}s"
