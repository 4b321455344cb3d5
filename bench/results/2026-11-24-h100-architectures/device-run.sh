set -x
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.device-carry/bin/doppler
$D devices 2>&1 | head -3
mkdir -p /work/wt/house/crates/engine && ln -sfn $PWD/tests /work/wt/house/tests
.device-carry/bin/hf_reference --nocapture --test-threads 2 2>&1 | grep -E "^test |largest|differs|panicked|result|error" | tee $OUT/hf_reference.txt
for s in "llama llama3.2-1b llama3" "qwen2 qwen2.5-1.5b qwen2" "qwen3 qwen3-4b qwen3" "phi3 phi3.5-mini phi3" "llama llama3.1-8b llama3"; do
  set -- $s
  $D synth --arch $1 --size $2 --out /tmp/$2.gguf --tokenizer-from tests/data/hf/$3/model.gguf 2>&1 | tail -1
  $D bench --model /tmp/$2.gguf --runs 2 --json > $OUT/bench-$2.json 2>$OUT/bench-$2.err
  python3 -c "import json;r=json.load(open('$OUT/bench-$2.json'));print('$2', 'pp512', round(r['pp_tokens_per_second']['mean']), 'tg128', round(r['tg_tokens_per_second']['mean']))" || tail -3 $OUT/bench-$2.err
  rm -f /tmp/$2.gguf
done
