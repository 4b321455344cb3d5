"""How far f16 rounding alone carries in a synthetic model: transformers in f32 on the GGUF's dequantized weights
(hf-eager-SHAPE.json), against the same with every weight rounded to f16 (hf-weights-f16-SHAPE.json) and with every
linear layer's input rounded to f16 as well (hf-inputs-f16-SHAPE.json), the rounding the tensor-core products
make; the arithmetic stays f32. python3 hf_rounding.py MODELS_DIR OUT_DIR SHAPE..."""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM

torch.backends.cuda.matmul.allow_tf32 = False
models, out = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))


def round_input(module, args):
    return tuple(a.half().float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args)


for shape in sys.argv[3:]:
    tokens = json.load(open(f"{here}/top.json"))[f"prompt_tokens-{shape}"]
    model = AutoModelForCausalLM.from_pretrained(models, gguf_file=f"{shape}.gguf", torch_dtype=torch.float32, attn_implementation="eager").cuda().eval()
    ids = torch.tensor([tokens], device="cuda")
    with torch.no_grad():
        for name in ["hf-eager", "hf-weights-f16", "hf-inputs-f16"]:
            if name == "hf-weights-f16":
                for p in model.parameters():
                    p.copy_(p.half().float())
            if name == "hf-inputs-f16":
                for m in model.modules():
                    if isinstance(m, torch.nn.Linear):
                        m.register_forward_pre_hook(round_input)
            logits = model(ids).logits[0, -1].float().cpu().tolist()
            json.dump({"prompt_tokens": tokens, "logits": logits}, open(f"{out}/{name}-{shape}.json", "w"))
            print(shape, name, "done")
