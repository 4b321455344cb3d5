"""An exact (f64) CPU forward pass of a Gemma 3 or Llama GGUF model with numpy, independent of
the engine: it checks the engine's logits where llama.cpp's own CPU backend, which rounds
activations to 8 bits inside its matmuls, is too coarse a yardstick.

Usage: python3 tools/reference_forward.py MODEL.gguf REFERENCE.json OUT.json
(needs `pip install numpy gguf`). For each case of llama.cpp's REFERENCE.json, writes the ten
highest exact first-step logits after its prompt_tokens.
"""
import functools, json, sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

path, reference_path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
r = GGUFReader(path)
arch = r.fields['general.architecture'].contents()
T = {t.name: t for t in r.tensors}
@functools.lru_cache(maxsize=None)
def W(name):
    t = T[name]; d = dequantize(t.data, t.tensor_type).astype(np.float64)
    return d.reshape([int(x) for x in reversed(t.shape)]) if d.ndim==1 and len(t.shape)>1 else d
f = lambda k: r.fields[k].contents()
p = arch
H = f(f'{p}.embedding_length'); L = f(f'{p}.block_count'); nh = f(f'{p}.attention.head_count'); nkv = f(f'{p}.attention.head_count_kv')
eps = f(f'{p}.attention.layer_norm_rms_epsilon')
hd = f(f'{p}.attention.key_length') if f'{p}.attention.key_length' in r.fields else H//nh
base = f(f'{p}.rope.freq_base')
emb = W('token_embd.weight')
def rms(x, w): return x / np.sqrt((x*x).mean(-1, keepdims=True) + eps) * w
def rope(x, pos, theta, neox):
    # x: [n, heads, hd]
    half = hd//2
    inv = theta ** (-2*np.arange(half)/hd)
    ang = pos[:,None]*inv[None,:]
    c, s = np.cos(ang)[:,None,:], np.sin(ang)[:,None,:]
    y = x.copy()
    if neox:
        a, b = x[...,:half], x[...,half:]
        y[...,:half] = a*c - b*s; y[...,half:] = a*s + b*c
    else:
        a, b = x[...,0::2], x[...,1::2]
        y[...,0::2] = a*c - b*s; y[...,1::2] = a*s + b*c
    return y
def first_step_top10(toks):
    n = len(toks); pos = np.arange(n, dtype=np.float64)
    x = emb[toks]
    gemma = arch == 'gemma3'
    if gemma: x = x * np.sqrt(H)
    for l in range(L):
        g = lambda s: W(f'blk.{l}.{s}.weight')
        h = rms(x, g('attn_norm'))
        q = (h @ g('attn_q').T).reshape(n, nh, hd); k = (h @ g('attn_k').T).reshape(n, nkv, hd); v = (h @ g('attn_v').T).reshape(n, nkv, hd)
        if gemma:
            q = rms(q, g('attn_q_norm')); k = rms(k, g('attn_k_norm'))
        sliding = gemma and (l+1) % 6 != 0
        th = 10000.0 if sliding else base
        q = rope(q, pos, th, gemma); k = rope(k, pos, th, gemma)
        out = np.zeros((n, nh, hd))
        for hh in range(nh):
            kv = hh // (nh//nkv)
            sc = q[:,hh,:] @ k[:,kv,:].T / np.sqrt(hd)
            mask = np.triu(np.ones((n,n)),1).astype(bool)
            sc[mask] = -np.inf
            sc = np.exp(sc - sc.max(-1, keepdims=True)); sc /= sc.sum(-1, keepdims=True)
            out[:,hh,:] = sc @ v[:,kv,:]
        o = out.reshape(n, nh*hd) @ g('attn_output').T
        if gemma: o = rms(o, g('post_attention_norm'))
        x = x + o
        h = rms(x, g('ffn_norm'))
        gt = h @ g('ffn_gate').T; up = h @ g('ffn_up').T
        if gemma: a = 0.5*gt*(1+np.tanh(np.sqrt(2/np.pi)*(gt+0.044715*gt**3)))
        else: a = gt/(1+np.exp(-gt))
        d = (a*up) @ g('ffn_down').T
        if gemma: d = rms(d, g('post_ffw_norm'))
        x = x + d
    x = rms(x, W('output_norm.weight'))
    logits = x[-1] @ (W('output.weight') if 'output.weight' in T else emb).T
    top = np.argsort(-logits)[:10]
    return [[int(t), float(logits[t])] for t in top]


cases = json.load(open(reference_path))['cases']
result = [{'prompt': c['prompt'], 'prompt_tokens': c['prompt_tokens'], 'top10': first_step_top10(c['prompt_tokens'])} for c in cases]
json.dump({'model': path.rsplit('/', 1)[-1], 'source': 'tools/reference_forward.py (numpy, f64)', 'cases': result}, open(out_path, 'w'), indent=1)
