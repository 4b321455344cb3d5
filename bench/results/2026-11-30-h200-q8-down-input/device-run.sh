#!/bin/bash
# Decode products of small matrices on a quantized input: a build (`doppler`, d8ca779 with a temporary switch,
# DOPPLER_MIN_Q8_KIB) where the products of an f32 decode input (the feed-forward's gated output into ffn_down)
# take it in Q8 form, quantized by a dispatch of its own, from that many KiB of weights instead of 16 MiB.
# tg128 on an idle H200, interleaved: the switch at 0 (always) against the default, two rounds at depth 0 and
# one at 4096.
set -uo pipefail
source bench/device-env.sh
shapes="l3b-iq4xs llama3.2-1b llama3.2-3b 1b qwen3-4b"
synth $shapes
for round in r1 r2; do
  for shape in $shapes; do tg128 doppler $shape 0 $round; tg128 doppler $shape 0 $round DOPPLER_MIN_Q8_KIB=0; done
  echo "round $round after ${SECONDS}s"
done
for shape in $shapes; do tg128 doppler $shape 4096 r1; tg128 doppler $shape 4096 r1 DOPPLER_MIN_Q8_KIB=0; done
echo "all after ${SECONDS}s"
