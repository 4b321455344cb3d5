#!/bin/bash
# The residual norm and the decode products with fewer dependent round trips to memory (`doppler`) against
# 6434a3e (`doppler-base`) on an idle H200: the residual norm issues all its loads at once, reduces through
# subgroups, takes its sizes as defines and reads the step only past token 0; the products take their
# parameters as defines instead of a uniform. Temporary switches of this build: DOPPLER_UNIFORM_PARAMS=1
# (the products' uniform back), DOPPLER_NORM_WG=1024 (the norm's threads up to 1,024, one vector each).
# First the GPU tests of this build, then tg128 interleaved, a second round at depth 0 for Llama 3.2 3B.
set -uo pipefail
source bench/device-env.sh
synth llama3.2-3b 4b qwen2.5-7b l3b-iq4xs
gpu_tests
variants() {
  tg128 doppler-base $1 $2 $3; tg128 doppler $1 $2 $3
  tg128 doppler $1 $2 $3 DOPPLER_UNIFORM_PARAMS=1; tg128 doppler $1 $2 $3 DOPPLER_NORM_WG=1024
}
for depth in 0 4096; do
  for file in l3b-iq4xs llama3.2-3b 4b qwen2.5-7b; do variants $file $depth r1; done
done
echo "round r1 after ${SECONDS}s"
for file in l3b-iq4xs llama3.2-3b; do variants $file 0 r2; done
echo "all after ${SECONDS}s"
