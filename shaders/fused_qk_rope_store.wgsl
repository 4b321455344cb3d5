// The attention block's per-head work between the q/k/v projections and attention, in one
// dispatch: optional per-head RMSNorm of q and k (QK_NORM, Gemma), RoPE of q and k, and the
// store of k and v into the KV cache. One workgroup per (token, row): rows 0..n_heads are the
// query heads (rotated in place), rows n_heads.. the kv heads (rotated k and plain v go to
// cache slot (pos + token) mod cache_len). The math and its order match the separate
// rmsnorm, rope and kv_store kernels. QKV_BIAS: q, k and v get their biases first (Qwen 2's,
// in prefill: three dispatches fewer a layer).
#include "step.wgsl"

#ifdef F16
alias kv_t = f16;
#else
alias kv_t = f32;
#endif

struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    rot_dim: u32,
    max_positions: u32,
    cache_len: u32,
    eps: f32,
    _pad0: u32,
    _pad1: u32,
}

// q: [n_tokens, n_heads, HEAD_DIM]; k, v: [n_tokens, n_kv_heads, HEAD_DIM].
@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<kv_t>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<kv_t>;
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> params: Params;
// [max_positions, rot_dim / 2] of (cos θ, sin θ).
@group(0) @binding(7) var<storage, read> table: array<vec2<f32>>;
#ifdef QK_NORM
@group(0) @binding(8) var<storage, read> q_norm: array<f32>;
@group(0) @binding(9) var<storage, read> k_norm: array<f32>;
#endif
#ifdef QKV_BIAS
// [n_heads + 2 n_kv_heads, HEAD_DIM]: q's biases, then k's, then v's.
@group(0) @binding(10) var<storage, read> qkv_bias: array<f32>;
#endif

// One row per workgroup: a query head's, or a kv head's key.
const QK_ROWS = 2u;
#include "qk_rope.wgsl"

// The bias of element i of v.
fn v_bias(i: u32) -> f32 {
#ifdef QKV_BIAS
    return qkv_bias[(params.n_heads + params.n_kv_heads) * HEAD_DIM + i % (params.n_kv_heads * HEAD_DIM)];
#else
    return 0.0;
#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let rows_per_token = params.n_heads + params.n_kv_heads;
    let item = wid.x + wid.y * nwg.x;
    if (item >= step.n_tokens * rows_per_token) {
        return;
    }
    let token = item / rows_per_token;
    let head = item % rows_per_token;
    let is_query = head < params.n_heads;
    let kv_head = head - params.n_heads;
    let q_base = (token * params.n_heads + head) * HEAD_DIM;
    let kv_base = (token * params.n_kv_heads + kv_head) * HEAD_DIM;

    stage_rows(lid, q_base, kv_base, select(0u, 1u, is_query), !is_query);
    let row = select(KEY_ROW, 0u, is_query);

    let pos = step.pos + token;
    let cs_base = rope_base(pos);
    let slot_base = ((pos % params.cache_len) * params.n_kv_heads + kv_head) * HEAD_DIM;
    for (var d = lid; d < HEAD_DIM; d += WG) {
        let y = rotated(row, d, cs_base);
        if (is_query) {
            q[q_base + d] = y;
        } else {
            k_cache[slot_base + d] = kv_t(y);
            v_cache[slot_base + d] = kv_t(v[kv_base + d] + v_bias(kv_base + d));
        }
    }
}
