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
//   split_partial (SPLIT) + split_combine (MERGE), for decode: flash-decoding. The one query's keys are
//     cut into up to N_SPLITS slices of at least MIN_SLICE_KEYS keys, one workgroup per
//     (head, slice) leaves an unnormalized partial (its running max, sum and weighted values),
//     and a workgroup per head merges them, so a long context spreads over many workgroups
//     instead of walking serially in a few. Workgroups past the filled slices only mark theirs
//     empty.
//     With ROPE_STORE, split_partial also takes over fused_qk_rope_store.wgsl's work for the
//     step: each workgroup norms (QK_NORM) and rotates its head's raw query itself, and the
//     workgroups whose slice holds the step's position rotate its key and store it and its
//     value in the cache before reading them (several do, with identical values, under GQA).
#include "step.wgsl"

#ifdef F16
alias kv_t = f16;
#else
alias kv_t = f32;
#endif

#ifdef MERGE
// [n_heads, N_SPLITS, HEAD_DIM / 4] weighted value sums and [n_heads, N_SPLITS] (max, sum).
@group(0) @binding(0) var<storage, read> split_acc: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> split_stats: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;

const COLUMNS = HEAD_DIM / 4u;
// Whole groups of COLUMNS threads; where COLUMNS does not divide WG (heads of 96 values: 24
// columns, 10 groups of 256 threads) the threads past the last group only join the reductions.
const GROUPS = WG / COLUMNS;

var<workgroup> weights: array<f32, N_SPLITS>;
var<workgroup> group_sums: array<vec4<f32>, WG>;

// One workgroup per head: rescales every slice to the overall max and normalizes. Thread
// (group g, column c) sums slices g, g + GROUPS, … of column c, so no thread walks all slices.
@compute @workgroup_size(WG)
fn split_combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let head = wid.x;
    let stats_base = head * N_SPLITS;
    var stats = vec2<f32>(-3.0e38, 0.0);
    if (lid < N_SPLITS) {
        stats = split_stats[stats_base + lid];
        weights[lid] = stats.x;
    }
    workgroupBarrier();
    var overall_max = -3.0e38;
    for (var s = 0u; s < N_SPLITS; s++) {
        overall_max = max(overall_max, weights[s]);
    }
    workgroupBarrier();
    if (lid < N_SPLITS) {
        // An empty slice has sum 0: weight 0.
        weights[lid] = select(0.0, exp(stats.x - overall_max), stats.y > 0.0);
        group_sums[lid] = vec4<f32>(stats.y * weights[lid]);
    }
    workgroupBarrier();
    var total = 0.0;
    for (var s = 0u; s < N_SPLITS; s++) {
        total += group_sums[s].x;
    }
    workgroupBarrier();
    let column = lid % COLUMNS;
    let group = lid / COLUMNS;
    var value = vec4<f32>(0.0);
    for (var s = group; s < N_SPLITS && group < GROUPS; s += GROUPS) {
        // An empty slice leaves its values unwritten.
        if (weights[s] > 0.0) {
            value += split_acc[(stats_base + s) * COLUMNS + column] * weights[s];
        }
    }
    group_sums[lid] = value;
    workgroupBarrier();
    if (group == 0u) {
        for (var g = 1u; g < GROUPS; g++) {
            value += group_sums[g * COLUMNS + column];
        }
        out[head * COLUMNS + column] = value / total;
    }
}
#else
#include "attention_params.wgsl"

// q and out: [n_tokens, n_heads, HEAD_DIM]; caches: [cache_len, n_kv_heads, HEAD_DIM].
@group(0) @binding(0) var<storage, read> q: array<f32>;
#ifndef SPLIT
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<kv_t>>;
#endif
#ifdef SPLIT
#ifdef ROPE_STORE
@group(0) @binding(1) var<storage, read_write> k_cache: array<vec4<kv_t>>;
@group(0) @binding(2) var<storage, read_write> v_cache: array<vec4<kv_t>>;
#else
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<kv_t>>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<kv_t>>;
#endif
@group(0) @binding(3) var<storage, read_write> split_acc: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> split_stats: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> params: Params;
#ifdef ROPE_STORE
// The step's raw key and value rows: [n_kv_heads, HEAD_DIM].
@group(0) @binding(7) var<storage, read> k: array<f32>;
@group(0) @binding(8) var<storage, read> v: array<f32>;
// [max_positions, rot_dim / 2] of (cos θ, sin θ).
@group(0) @binding(9) var<storage, read> table: array<vec2<f32>>;
#ifdef QK_NORM
@group(0) @binding(10) var<storage, read> q_norm: array<f32>;
@group(0) @binding(11) var<storage, read> k_norm: array<f32>;
#endif
#endif
#else
#ifdef BLOCK
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<kv_t>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
#else
@group(0) @binding(2) var<storage, read> v_cache: array<kv_t>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
#endif
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> params: Params;
#endif

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
#ifndef SPLIT
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
#else
const COLUMNS = HEAD_DIM / 4u;
const GROUPS = WG / COLUMNS;

var<workgroup> group_sums: array<vec4<f32>, WG>;

#ifdef ROPE_STORE
#include "qk_rope.wgsl"

// Four rotated values of the q or k row from element 4·column.
fn rotated4(column: u32, scale: f32, is_query: bool, cs_base: u32) -> vec4<f32> {
    let d = 4u * column;
    return vec4<f32>(rotated(d, scale, is_query, cs_base), rotated(d + 1u, scale, is_query, cs_base), rotated(d + 2u, scale, is_query, cs_base), rotated(d + 3u, scale, is_query, cs_base));
}

// As load_query, for the raw query of `head` at position `pos`, normed and rotated first;
// with stores_key (uniform over the workgroup) also rotates the step's key of `kv_head` into
// the cache at `pos`, with its value, visible to the workgroup afterwards. Both raw rows are
// read in one round of loads. Every thread calls it.
fn load_rotated_query(lid: u32, head: u32, kv_head: u32, pos: u32, stores_key: bool) {
    let scales = load_rows(lid, head * HEAD_DIM, kv_head * HEAD_DIM, true, stores_key);
    let cs_base = rope_base(pos);
    let slot = ((pos % params.cache_len) * params.n_kv_heads + kv_head) * COLUMNS;
    for (var column = lid; column < COLUMNS; column += WG) {
        q_shared[column] = rotated4(column, scales.x, true, cs_base) * params.scale;
        if (stores_key) {
            k_cache[slot + column] = vec4<kv_t>(rotated4(column, scales.y, false, cs_base));
            let d = kv_head * HEAD_DIM + 4u * column;
            v_cache[slot + column] = vec4<kv_t>(vec4<f32>(v[d], v[d + 1u], v[d + 2u], v[d + 3u]));
        }
    }
    storageBarrier();
    workgroupBarrier();
}
#endif

// The score of key tile + lid for lid < keys_in_tile (NO_SCORE for the others). A decode
// slice often holds only a few keys: one thread walking a key's whole row would chain
// HEAD_DIM / 4 loads, so each key gets the most threads the tile leaves it (a power of two
// up to a thread per vector), which read neighbouring vectors and sum them in `probs`.
fn tile_score(lid: u32, tile: u32, keys_in_tile: u32, kv_stride: u32, kv_base: u32) -> f32 {
    var per_key = 1u;
    while (per_key < COLUMNS && keys_in_tile * per_key * 2u <= WG) {
        per_key *= 2u;
    }
    let key = lid / per_key;
    let part = lid % per_key;
    var partial = 0.0;
    if (key < keys_in_tile) {
        let k_base = ((tile + key) % params.cache_len) * kv_stride + kv_base;
        var dot4 = vec4<f32>(0.0);
        for (var d = part; d < COLUMNS; d += per_key) {
            dot4 += q_shared[d] * vec4<f32>(k_cache[k_base + d]);
        }
        partial = dot4.x + dot4.y + dot4.z + dot4.w;
    }
    probs[lid] = partial;
    workgroupBarrier();
    for (var stride = per_key / 2u; stride > 0u; stride >>= 1u) {
        if (part < stride) {
            probs[lid] += probs[lid + stride];
        }
        workgroupBarrier();
    }
    var score = NO_SCORE;
    if (lid < keys_in_tile) {
        score = probs[lid * per_key];
    }
    // `probs` is written again once every thread has its score.
    workgroupBarrier();
    return score;
}

// Workgroup (head, slice) for the step's single token; an empty slice leaves sum 0. Scores
// come from tile_score; for the values, thread (group g, column c) sums keys g, g + GROUPS,
// … of vec4 column c, which keeps each thread's chain of dependent loads short.
@compute @workgroup_size(WG)
fn split_partial(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let head = wid.x / N_SPLITS;
    let slice = wid.x % N_SPLITS;
    let q_pos = step.pos;
    let first = first_key(q_pos);
    // Slices of at least MIN_SLICE_KEYS keys: a short context fills only the first few, and
    // the empty rest leave at once (the merge skips them).
    let keys_per_slice = max((q_pos + 1u - first + N_SPLITS - 1u) / N_SPLITS, MIN_SLICE_KEYS);
    let slice_first = min(first + slice * keys_per_slice, q_pos + 1u);
    let slice_end = min(slice_first + keys_per_slice, q_pos + 1u);
    let item = head * N_SPLITS + slice;
    if (slice_first == slice_end) {
        if (lid == 0u) {
            split_stats[item] = vec2<f32>(NO_SCORE, 0.0);
        }
        return;
    }
    let kv_head = head / (params.n_heads / params.n_kv_heads);
#ifdef ROPE_STORE
    load_rotated_query(lid, head, kv_head, q_pos, slice_end == q_pos + 1u);
#else
    load_query(lid, head * HEAD_DIM);
#endif
    let kv_stride = params.n_kv_heads * COLUMNS;
    let kv_base = kv_head * COLUMNS;
    let column = lid % COLUMNS;
    let group = lid / COLUMNS;

    var running_max = NO_SCORE;
    var running_sum = 0.0;
    var acc = vec4<f32>(0.0);
    for (var tile = slice_first; tile < slice_end; tile += WG) {
        let key_pos = tile + lid;
        let keys_in_tile = min(WG, slice_end - tile);
        let score = tile_score(lid, tile, keys_in_tile, kv_stride, kv_base);
        let new_max = max(running_max, workgroup_max(lid, score));
        var p = 0.0;
        if (key_pos < slice_end) {
            p = exp(score - new_max);
        }
        probs[lid] = p;
        let tile_sum = workgroup_sum(lid, p);
        let correction = exp(running_max - new_max);
        running_sum = running_sum * correction + tile_sum;
        running_max = new_max;
        acc *= correction;
        // Threads past the last whole group (see GROUPS) add nothing.
        for (var j = group; j < keys_in_tile && group < GROUPS; j += GROUPS) {
            acc += probs[j] * vec4<f32>(v_cache[((tile + j) % params.cache_len) * kv_stride + kv_base + column]);
        }
        workgroupBarrier();
    }
    group_sums[lid] = acc;
    workgroupBarrier();
    if (group == 0u) {
        for (var g = 1u; g < GROUPS; g++) {
            acc += group_sums[g * COLUMNS + column];
        }
        split_acc[item * COLUMNS + column] = acc;
    }
    if (lid == 0u) {
        split_stats[item] = vec2<f32>(running_max, running_sum);
    }
}
#endif
#endif
