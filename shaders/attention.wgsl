// Causal attention over the KV cache with an online softmax. Keys are taken a tile of WG at
// a time (one key per thread, its row read as vec4s), the tile's probabilities go through
// shared memory, and each thread accumulates its own slice of the output dimensions.
// Grouped-query attention: query head h reads kv head h / (n_heads / n_kv_heads).
// Params.window > 0 (sliding-window layers): a query at position p sees keys p - window + 1 ..= p.
// Entry points:
//   main: one workgroup per (token, head) walks all of its keys; any number of tokens (prefill).
//   split_partial (SPLIT) + split_combine (MERGE), for decode: flash-decoding. The one query's keys are
//     cut into N_SPLITS slices, one workgroup per (head, slice) leaves an unnormalized partial
//     (its running max, sum and weighted values), and a workgroup per head merges them, so a
//     long context spreads over many workgroups instead of walking serially in a few.
#include "step.wgsl"

#ifdef F16
alias kv_t = f16;
#else
alias kv_t = f32;
#endif

#ifdef MERGE
// [n_heads, N_SPLITS, HEAD_DIM] weighted value sums and [n_heads, N_SPLITS] (max, sum).
@group(0) @binding(0) var<storage, read> split_acc: array<f32>;
@group(0) @binding(1) var<storage, read> split_stats: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// One workgroup per head: rescales every slice to the overall max and normalizes.
@compute @workgroup_size(WG)
fn split_combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let head = wid.x;
    let stats_base = head * N_SPLITS;
    var overall_max = -3.0e38;
    for (var s = 0u; s < N_SPLITS; s++) {
        overall_max = max(overall_max, split_stats[stats_base + s].x);
    }
    var total = 0.0;
    for (var s = 0u; s < N_SPLITS; s++) {
        let stats = split_stats[stats_base + s];
        total += stats.y * exp(stats.x - overall_max);
    }
    for (var d = lid; d < HEAD_DIM; d += WG) {
        var value = 0.0;
        for (var s = 0u; s < N_SPLITS; s++) {
            let stats = split_stats[stats_base + s];
            if (stats.y > 0.0) {
                value += split_acc[(stats_base + s) * HEAD_DIM + d] * exp(stats.x - overall_max);
            }
        }
        out[head * HEAD_DIM + d] = value / total;
    }
}
#else
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
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<kv_t>>;
@group(0) @binding(2) var<storage, read> v_cache: array<kv_t>;
#ifdef SPLIT
@group(0) @binding(3) var<storage, read_write> split_acc: array<f32>;
@group(0) @binding(4) var<storage, read_write> split_stats: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> params: Params;
#else
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> params: Params;
#endif

const DIMS_PER_THREAD = (HEAD_DIM + WG - 1u) / WG;
const NO_SCORE = -3.0e38;

var<workgroup> q_shared: array<vec4<f32>, HEAD_DIM / 4u>;
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

// Online-softmax state of one workgroup: the max and sum of its scores, and its thread's
// output dimensions lid + i·WG weighted by exp(score - max), not yet divided by the sum.
struct Attended {
    max: f32,
    sum: f32,
    acc: array<f32, DIMS_PER_THREAD>,
}

fn load_query(lid: u32, q_base: u32) {
    for (var d = lid; d < HEAD_DIM / 4u; d += WG) {
        let i = q_base + 4u * d;
        q_shared[d] = vec4<f32>(q[i], q[i + 1u], q[i + 2u], q[i + 3u]) * params.scale;
    }
    workgroupBarrier();
}

// Attends the query in q_shared over key positions first..end of kv head `kv_head`.
fn attend(lid: u32, kv_head: u32, first: u32, end: u32) -> Attended {
    let kv_stride = params.n_kv_heads * HEAD_DIM;
    let kv_base = kv_head * HEAD_DIM;
    var state: Attended;
    state.max = NO_SCORE;
    state.sum = 0.0;
    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
        state.acc[i] = 0.0;
    }
    for (var tile = first; tile < end; tile += WG) {
        let key_pos = tile + lid;
        var score = NO_SCORE;
        if (key_pos < end) {
            let k_base = ((key_pos % params.cache_len) * kv_stride + kv_base) / 4u;
            var dot4 = vec4<f32>(0.0);
            for (var d = 0u; d < HEAD_DIM / 4u; d++) {
                dot4 += q_shared[d] * vec4<f32>(k_cache[k_base + d]);
            }
            score = dot4.x + dot4.y + dot4.z + dot4.w;
        }
        let new_max = max(state.max, reduce_max(lid, score));
        var p = 0.0;
        if (key_pos < end) {
            p = exp(score - new_max);
        }
        probs[lid] = p;
        let tile_sum = reduce_sum(lid, p);
        let correction = exp(state.max - new_max);
        state.sum = state.sum * correction + tile_sum;
        state.max = new_max;
        let keys_in_tile = min(WG, end - tile);
        for (var i = 0u; i < DIMS_PER_THREAD; i++) {
            let d = lid + i * WG;
            if (d < HEAD_DIM) {
                var sum = state.acc[i] * correction;
                for (var j = 0u; j < keys_in_tile; j++) {
                    let v_index = ((tile + j) % params.cache_len) * kv_stride + kv_base + d;
                    sum += probs[j] * f32(v_cache[v_index]);
                }
                state.acc[i] = sum;
            }
        }
        workgroupBarrier();
    }
    return state;
}

// The first key position a query at `q_pos` sees.
fn first_key(q_pos: u32) -> u32 {
    if (params.window > 0u && q_pos + 1u > params.window) {
        return q_pos + 1u - params.window;
    }
    return 0u;
}

#ifndef SPLIT
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = wid.x + wid.y * nwg.x;
    if (item >= step.n_tokens * params.n_heads) {
        return;
    }
    let token = item / params.n_heads;
    let head = item % params.n_heads;
    let q_base = item * HEAD_DIM;
    load_query(lid, q_base);
    let q_pos = step.pos + token;
    let state = attend(lid, head / (params.n_heads / params.n_kv_heads), first_key(q_pos), q_pos + 1u);
    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
        let d = lid + i * WG;
        if (d < HEAD_DIM) {
            out[q_base + d] = state.acc[i] / state.sum;
        }
    }
}
#else
// Workgroup (head, slice) for the step's single token; an empty slice leaves sum 0.
@compute @workgroup_size(WG)
fn split_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let head = wid.x / N_SPLITS;
    let slice = wid.x % N_SPLITS;
    let q_pos = step.pos;
    let first = first_key(q_pos);
    let keys_per_slice = (q_pos + 1u - first + N_SPLITS - 1u) / N_SPLITS;
    let slice_first = min(first + slice * keys_per_slice, q_pos + 1u);
    let slice_end = min(slice_first + keys_per_slice, q_pos + 1u);
    load_query(lid, head * HEAD_DIM);
    let state = attend(lid, head / (params.n_heads / params.n_kv_heads), slice_first, slice_end);
    let item = head * N_SPLITS + slice;
    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
        let d = lid + i * WG;
        if (d < HEAD_DIM) {
            split_acc[item * HEAD_DIM + d] = state.acc[i];
        }
    }
    if (lid == 0u) {
        split_stats[item] = vec2<f32>(state.max, state.sum);
    }
}
#endif
#endif
