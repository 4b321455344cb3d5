#!/bin/bash
# FlashAttention-2-style prefill attention (attention_flash2.wgsl, branch flash2): one binary, the kernel
# chosen by the build's temporary switch EXP_FLASH (new by default, `old` = attention_flash.wgsl as on main)
# and EXP_FLASH_ROWS (queries a workgroup, default 64). The tensor-core attention tests (kt) and the
# hf_reference fixtures of the new kernel first, then prefill tokens/s (`doppler bench --runs 2 --gen-tokens 4`)
# old against new: pp512 at depth 4096 in two interleaved rounds, at depth 0 in one, 128-token steps at depth
# 4096 (the split path). Second build: two interleaved score chains, and EXP_SPLIT=below,target (the key
# splits' SPLIT_BELOW_WORKGROUPS and TARGET_WORKGROUPS for the new kernel, default 128,256 as main).
# The binaries travel in .device-parts/flash2/doppler.tar.xz with this script (carry it and .gl).
set -uo pipefail
P=.device-parts/flash2
source bench/device-env.sh 2>/dev/null
tar -xJf $P/doppler.tar.xz -C $B
# The test binaries look for the repository where they were built.
[ -e /work/wt-flash2 ] || { mkdir -p /work; ln -s "$PWD" /work/wt-flash2; }
export XDG_RUNTIME_DIR=/tmp
L=${OUT:-/tmp}
echo "== kt attention (new)"
timeout 120 $B/kt --test-threads=1 attention > $L/kt.log 2>&1
grep -E "^test |test result" $L/kt.log; grep -A6 panicked $L/kt.log | head -24
echo "== synth after ${SECONDS}s"
SHAPES="llama3.1-8b llama3.2-1b qwen3-4b phi3.5-mini"
synth $SHAPES
# pp SHAPE DEPTH TOKENS LABEL [ENV...]: one line of prefill tokens/s (steps of TOKENS tokens).
pp() {
  local shape=$1 depth=$2 tokens=$3 label=$4; shift 4
  env "$@" timeout 90 $B/doppler bench --model $M/$shape.gguf --runs 2 --depth $depth --prompt-tokens $tokens \
    --gen-tokens 4 --json > $M/r.json 2> $M/err || tail -3 $M/err
  python3 -c "import json;r=json.load(open('$M/r.json'));print('$label $shape d$depth ${*:-new} pp$tokens', round(r['pp_tokens_per_second']['mean']))"
}
echo "== kt attention (new, EXP_SPLIT=1024,512)"
EXP_SPLIT=1024,512 timeout 120 $B/kt --test-threads=1 attention 2>&1 | grep -E "test result"
echo "== benches after ${SECONDS}s"
SHAPES="llama3.1-8b llama3.2-1b qwen3-4b phi3.5-mini"
for r in r1 r2; do for s in $SHAPES; do
  pp $s 4096 512 $r EXP_FLASH=old; pp $s 4096 512 $r; pp $s 4096 512 $r EXP_SPLIT=1024,512; pp $s 4096 512 $r EXP_SPLIT=1024,1024
done; done
for x in EXP_FLASH=old EXP_SPLIT=128,256 EXP_SPLIT=1024,512; do pp llama3.1-8b 4096 128 r1 $x; done
for s in $SHAPES; do pp $s 0 512 r1 EXP_FLASH=old; pp $s 0 512 r1; pp $s 0 512 r1 EXP_SPLIT=1024,512; done
echo "== hf after ${SECONDS}s"
timeout 150 $B/hf --test-threads=1 > $L/hf.log 2>&1
grep -E "test result" $L/hf.log; grep -A4 panicked $L/hf.log | head -20
echo "done after ${SECONDS}s"
