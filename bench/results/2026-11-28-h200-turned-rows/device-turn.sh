#!/bin/bash
# The packed decode attention slices norm and rotate each staged q/k value once, by one thread (turn_rows),
# against each thread rotating its chunks of every row itself (EXP_OLD_TURN, as at 687b3b0) and against the
# q/k step as its own dispatch (EXP_NO_FUSE). tg128 after a 64-token prompt, depths 0 and 4096.
set -uo pipefail
source bench/device-env.sh
SHAPES="qwen3-4b qwen2.5-1.5b qwen2.5-7b llama3.2-1b llama3.2-3b llama3.1-8b"
synth $SHAPES > /dev/null
for round in r1 r2; do
  for depth in 0 4096; do
    for shape in $SHAPES; do
      [ $round = r2 ] && [ $shape != qwen3-4b ] && continue
      tg128 doppler $shape $depth "$round turned"
      EXP_OLD_TURN=1 tg128 doppler $shape $depth "$round old"
      [ $shape = qwen3-4b ] && EXP_NO_FUSE=1 tg128 doppler $shape $depth "$round separate"
    done
  done
done
echo "done after ${SECONDS}s"
