#!/bin/bash
# Typed-tensor recorders on the H100: the kernel tests (cooperative-matrix paths lavapipe lacks) and
# hf_reference, then decode/prefill of the build before (doppler-base, 743183c) and after, interleaved.
# Carry .gl and .device-carry/bins.tar.xz (doppler, doppler-base and the stripped test binaries, the
# engine's lib tests among them for the peak-bandwidth probe).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /work && ln -sfn "$PWD" /work/main
B=/tmp/bin; mkdir -p $B; tar -xJf .device-carry/bins.tar.xz -C $B
R=/tmp/r; M=/tmp/m; mkdir -p $R $M
$B/doppler devices 2>/dev/null | head -3
for t in kernels_matmul kernels_transformer kernels_sampling; do
  echo "== $t"; (cd crates/engine && timeout 240 $B/$t --test-threads 2 2>&1 | grep -E "^test |result|panicked|cooperative" | head -40)
done > $R/tests.txt 2>&1
echo "== gpu:: (peak bandwidth, variants)" >> $R/tests.txt; (cd crates/engine && $B/doppler_engine gpu:: --nocapture 2>&1 | grep -E "^test |result|panicked|GB/s" | head -20) >> $R/tests.txt
echo "== hf_reference" >> $R/tests.txt; (cd crates/engine && timeout 200 $B/hf_reference 2>&1 | grep -E "^test |result|panicked" | head -20) >> $R/tests.txt
grep -E "result|panicked|FAILED" $R/tests.txt
for s in "gemma3 270m gemma3" "llama llama3.2-1b llama3" "llama llama3.1-8b llama3"; do
  set -- $s
  $B/doppler synth --arch $1 --size $2 --out $M/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  for round in 1 2; do for bin in doppler-base doppler; do
    [ $SECONDS -lt ${LIMIT:-540} ] || break 3
    $B/$bin bench --model $M/$2.gguf --runs 2 --json > $R/$2-$bin-r$round.json 2>$M/err || tail -3 $M/err
    python3 -c "import json; r=json.load(open('$R/$2-$bin-r$round.json')); print('$2 $bin r$round', round(r['pp_tokens_per_second']['mean']), round(r['tg_tokens_per_second']['mean'],1))" 2>/dev/null
  done; done
done | tee $R/bench.txt
tar -czf $OUT/typed.tar.gz -C $R .
echo "done after ${SECONDS}s"
