// Causal attention over the KV cache with an online softmax, one workgroup per
// (token, head): keys are taken a tile of WG at a time (one key per thread), the tile's
// probabilities go through shared memory, and each thread accumulates its own slice of the
// output dimensions. Works for any context length with one dispatch per layer.
// Grouped-query attention: query head h reads kv head h / (n_heads / n_kv_heads).
// WINDOW > 0 (sliding-window layers): a query at position p sees keys p - window + 1 ..= p.
#include "step.wgsl"

#ifdef F16
alias kv_t = f16;
#else
alias kv_t = f32;
#endif

struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    cache_len: u32,
    window: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// q and out: [n_tokens, n_heads, HEAD_DIM]; caches: [cache_len, n_kv_heads, HEAD_DIM].
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_cache: array<kv_t>;
@group(0) @binding(2) var<storage, read> v_cache: array<kv_t>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> params: Params;

const DIMS_PER_THREAD = (HEAD_DIM + WG - 1u) / WG;

var<workgroup> q_shared: array<f32, HEAD_DIM>;
var<workgroup> probs: array<f32, WG>;
var<workgroup> reduce: array<f32, WG>;

fn reduce_max(lid: u32, value: f32) -> f32 {
    reduce[lid] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            reduce[lid] = max(reduce[lid], reduce[lid + stride]);
        }
        workgroupBarrier();
    }
    let result = reduce[0];
    workgroupBarrier();
    return result;
}

fn reduce_sum(lid: u32, value: f32) -> f32 {
    reduce[lid] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            reduce[lid] += reduce[lid + stride];
        }
        workgroupBarrier();
    }
    let result = reduce[0];
    workgroupBarrier();
    return result;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = wid.x + wid.y * nwg.x;
    if (item >= step.n_tokens * params.n_heads) {
        return;
    }
    let token = item / params.n_heads;
    let head = item % params.n_heads;
    let kv_head = head / (params.n_heads / params.n_kv_heads);
    let kv_stride = params.n_kv_heads * HEAD_DIM;
    let kv_base = kv_head * HEAD_DIM;

    let q_base = item * HEAD_DIM;
    for (var d = lid; d < HEAD_DIM; d += WG) {
        q_shared[d] = q[q_base + d] * params.scale;
    }
    workgroupBarrier();

    let q_pos = step.pos + token;
    var first = 0u;
    if (params.window > 0u && q_pos + 1u > params.window) {
        first = q_pos + 1u - params.window;
    }
    let end = q_pos + 1u;

    var running_max = -3.0e38;
    var running_sum = 0.0;
    var acc: array<f32, DIMS_PER_THREAD>;
    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
        acc[i] = 0.0;
    }

    for (var tile = first; tile < end; tile += WG) {
        let key_pos = tile + lid;
        var score = -3.0e38;
        if (key_pos < end) {
            let k_base = (key_pos % params.cache_len) * kv_stride + kv_base;
            var dot = 0.0;
            for (var d = 0u; d < HEAD_DIM; d++) {
                dot += q_shared[d] * f32(k_cache[k_base + d]);
            }
            score = dot;
        }
        let new_max = max(running_max, reduce_max(lid, score));
        var p = 0.0;
        if (key_pos < end) {
            p = exp(score - new_max);
        }
        probs[lid] = p;
        let tile_sum = reduce_sum(lid, p);
        let correction = exp(running_max - new_max);
        running_sum = running_sum * correction + tile_sum;
        running_max = new_max;
        let keys_in_tile = min(WG, end - tile);
        for (var i = 0u; i < DIMS_PER_THREAD; i++) {
            let d = lid + i * WG;
            if (d < HEAD_DIM) {
                var sum = acc[i] * correction;
                for (var j = 0u; j < keys_in_tile; j++) {
                    let v_index = ((tile + j) % params.cache_len) * kv_stride + kv_base + d;
                    sum += probs[j] * f32(v_cache[v_index]);
                }
                acc[i] = sum;
            }
        }
        workgroupBarrier();
    }

    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
        let d = lid + i * WG;
        if (d < HEAD_DIM) {
            out[q_base + d] = acc[i] / running_sum;
        }
    }
}
