// Causal attention over the KV cache with an online softmax. Keys are taken a tile of WG at
// a time (one key per thread, its row read as vec4s), the tile's probabilities go through
// shared memory, and each thread accumulates its own slice of the output dimensions.
// Grouped-query attention: query head h reads kv head h / (n_heads / n_kv_heads).
// Params.window > 0 (sliding-window layers): a query at position p sees keys p - window + 1 ..= p.
// Entry points:
//   main: one workgroup per (token, head) walks all of its keys; any number of tokens.
//   block_main (BLOCK, needs subgroups), for prefill: one workgroup per QUERIES consecutive
//     tokens of a head, so each key and value read serves all of them; WG is a multiple of
//     HEAD_DIM / 4.
// Decode takes attention_decode.wgsl's key-split kernels instead where they fit.
#include "step.wgsl"

#ifdef F16
alias kv_t = f16;
#else
alias kv_t = f32;
#endif

#include "attention_params.wgsl"

// q and out: [n_tokens, n_heads, HEAD_DIM]; caches: [cache_len, n_kv_heads, HEAD_DIM].
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<kv_t>>;
#ifdef BLOCK
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<kv_t>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
#else
@group(0) @binding(2) var<storage, read> v_cache: array<kv_t>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
#endif
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> params: Params;

const DIMS_PER_THREAD = (HEAD_DIM + WG - 1u) / WG;
const NO_SCORE = -3.0e38;

#ifndef BLOCK
var<workgroup> q_shared: array<vec4<f32>, HEAD_DIM / 4u>;
var<workgroup> probs: array<f32, WG>;

#include "workgroup_reduce.wgsl"

fn load_query(lid: u32, q_base: u32) {
    for (var d = lid; d < HEAD_DIM / 4u; d += WG) {
        let i = q_base + 4u * d;
        q_shared[d] = vec4<f32>(q[i], q[i + 1u], q[i + 2u], q[i + 3u]) * params.scale;
    }
    workgroupBarrier();
}
#endif


#ifdef BLOCK
const COLUMNS = HEAD_DIM / 4u;
const GROUPS = WG / COLUMNS;

// The block's queries, scaled: [query][vec4 column].
var<workgroup> q_block: array<vec4<f32>, QUERIES * COLUMNS>;
// A tile's probabilities: [query][key in tile].
var<workgroup> tile_probs: array<f32, QUERIES * WG>;
// Per-subgroup maxima, then sums: [query][subgroup].
var<workgroup> subgroup_partials: array<f32, QUERIES * MAX_SUBGROUPS>;
var<workgroup> group_acc: array<vec4<f32>, WG>;

struct SubgroupIds {
    lane: u32,
    subgroup: u32,
    count: u32,
}

// The largest (or, with `add`, the total) over the workgroup of each query's value: within
// each subgroup, then over the subgroups' slots. Every thread gets every query's result.
fn combine_queries(values: array<f32, QUERIES>, add: bool, ids: SubgroupIds) -> array<f32, QUERIES> {
    for (var query = 0u; query < QUERIES; query++) {
        // Both, then a select: subgroup operations stay in uniform control flow.
        let partial = select(subgroupMax(values[query]), subgroupAdd(values[query]), add);
        if (ids.lane == 0u) {
            subgroup_partials[query * MAX_SUBGROUPS + ids.subgroup] = partial;
        }
    }
    workgroupBarrier();
    var results: array<f32, QUERIES>;
    for (var query = 0u; query < QUERIES; query++) {
        var result = subgroup_partials[query * MAX_SUBGROUPS];
        for (var s = 1u; s < ids.count; s++) {
            let other = subgroup_partials[query * MAX_SUBGROUPS + s];
            result = select(max(result, other), result + other, add);
        }
        results[query] = result;
    }
    workgroupBarrier();
    return results;
}

// Keys go a tile of WG at a time: thread j scores key j against every query of the block
// (one read of its row), and thread (group g, column c) accumulates vec4 column c of keys
// g, g + GROUPS, … for every query; the groups' sums are added at the end.
@compute @workgroup_size(WG)
fn block_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) subgroup_lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    let ids = SubgroupIds(subgroup_lane, subgroup, subgroups);
    let item = wid.x + wid.y * nwg.x;
    let blocks = (step.n_tokens + QUERIES - 1u) / QUERIES;
    if (item >= blocks * params.n_heads) {
        return;
    }
    let head = item % params.n_heads;
    let t0 = (item / params.n_heads) * QUERIES;
    let n_queries = min(QUERIES, step.n_tokens - t0);
    for (var i = lid; i < QUERIES * COLUMNS; i += WG) {
        let query = i / COLUMNS;
        var value = vec4<f32>(0.0);
        if (query < n_queries) {
            let base = ((t0 + query) * params.n_heads + head) * HEAD_DIM + 4u * (i % COLUMNS);
            value = vec4<f32>(q[base], q[base + 1u], q[base + 2u], q[base + 3u]) * params.scale;
        }
        q_block[i] = value;
    }
    let kv_stride = params.n_kv_heads * COLUMNS;
    let kv_base = (head / (params.n_heads / params.n_kv_heads)) * COLUMNS;
    let pos0 = step.pos + t0;
    let end = pos0 + n_queries;
    let column = lid % COLUMNS;
    let group = lid / COLUMNS;
    var running_max: array<f32, QUERIES>;
    var running_sum: array<f32, QUERIES>;
    var acc: array<vec4<f32>, QUERIES>;
    for (var query = 0u; query < QUERIES; query++) {
        running_max[query] = NO_SCORE;
        running_sum[query] = 0.0;
        acc[query] = vec4<f32>(0.0);
    }
    workgroupBarrier();

    for (var tile = first_key(pos0); tile < end; tile += WG) {
        let key_pos = tile + lid;
        var dots: array<vec4<f32>, QUERIES>;
        for (var query = 0u; query < QUERIES; query++) {
            dots[query] = vec4<f32>(0.0);
        }
        if (key_pos < end) {
            let k_base = (key_pos % params.cache_len) * kv_stride + kv_base;
            for (var d = 0u; d < COLUMNS; d++) {
                let k = vec4<f32>(k_cache[k_base + d]);
                for (var query = 0u; query < QUERIES; query++) {
                    dots[query] += q_block[query * COLUMNS + d] * k;
                }
            }
        }
        var scores: array<f32, QUERIES>;
        for (var query = 0u; query < QUERIES; query++) {
            let q_pos = pos0 + query;
            let seen = key_pos < end && query < n_queries && key_pos <= q_pos && key_pos >= first_key(q_pos);
            scores[query] = select(NO_SCORE, dot(dots[query], vec4<f32>(1.0)), seen);
        }
        let tile_max = combine_queries(scores, false, ids);
        var probs: array<f32, QUERIES>;
        for (var query = 0u; query < QUERIES; query++) {
            let new_max = max(running_max[query], tile_max[query]);
            // Unseen keys weigh nothing, even while a query has seen no key yet.
            probs[query] = select(0.0, exp(scores[query] - new_max), scores[query] > NO_SCORE);
            tile_probs[query * WG + lid] = probs[query];
            let correction = exp(running_max[query] - new_max);
            running_max[query] = new_max;
            running_sum[query] *= correction;
            acc[query] *= correction;
        }
        let tile_sum = combine_queries(probs, true, ids);
        for (var query = 0u; query < QUERIES; query++) {
            running_sum[query] += tile_sum[query];
        }
        let keys_in_tile = min(WG, end - tile);
        for (var j = group; j < keys_in_tile; j += GROUPS) {
            let value = vec4<f32>(v_cache[((tile + j) % params.cache_len) * kv_stride + kv_base + column]);
            for (var query = 0u; query < QUERIES; query++) {
                acc[query] += tile_probs[query * WG + j] * value;
            }
        }
        workgroupBarrier();
    }

    for (var query = 0u; query < QUERIES; query++) {
        group_acc[lid] = acc[query];
        workgroupBarrier();
        if (group == 0u && query < n_queries) {
            var total = group_acc[column];
            for (var g = 1u; g < GROUPS; g++) {
                total += group_acc[g * COLUMNS + column];
            }
            out[((t0 + query) * params.n_heads + head) * COLUMNS + column] = total / running_sum[query];
        }
        workgroupBarrier();
    }
}
#endif
#ifndef BLOCK
// Online-softmax state of one workgroup: the max and sum of its scores, and its thread's
// output dimensions lid + i·WG weighted by exp(score - max), not yet divided by the sum.
struct Attended {
    max: f32,
    sum: f32,
    acc: array<f32, DIMS_PER_THREAD>,
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
        let new_max = max(state.max, workgroup_max(lid, score));
        var p = 0.0;
        if (key_pos < end) {
            p = exp(score - new_max);
        }
        probs[lid] = p;
        let tile_sum = workgroup_sum(lid, p);
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

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
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
#endif
