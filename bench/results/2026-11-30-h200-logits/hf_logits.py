"""Hugging Face transformers' logits for the synthetic files of device-run.sh, after the token ids DOPPLER's run
printed (top.json), in f32 and in f16 on the GPU: hf-SHAPE.json and hf-f16-SHAPE.json.
python3 hf_logits.py MODELS_DIR OUT_DIR SHAPE..."""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM

models, out = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
for shape in sys.argv[3:]:
    tokens = json.load(open(f"{here}/top.json"))[f"prompt_tokens-{shape}"]
    model = AutoModelForCausalLM.from_pretrained(models, gguf_file=f"{shape}.gguf", torch_dtype=torch.float32).cuda().eval()
    ids = torch.tensor([tokens], device="cuda")
    for name, dtype in [("hf", torch.float32), ("hf-f16", torch.float16)]:
        with torch.no_grad():
            logits = model.to(dtype)(ids).logits[0, -1].float().cpu().tolist()
        json.dump({"prompt_tokens": tokens, "logits": logits}, open(f"{out}/{name}-{shape}.json", "w"))
        print(shape, name, "done")
