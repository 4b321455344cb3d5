// Causal attention over the KV cache with an online softmax. Keys are taken a tile of WG at
// a time, the tile's probabilities go through shared memory, and each thread accumulates its
// own slice of the output dimensions. Every kernel but the merge keeps QUERIES queries of the
// workgroup, scaled, in shared memory, so each key and value it reads serves all of them.
// Grouped-query attention: query head h reads kv head h / (n_heads / n_kv_heads).
// Params.window > 0 (sliding-window layers): a query at position p sees keys p - window + 1 ..= p.
// Entry points:
//   main (QUERIES 1): one workgroup per (token, head) walks all of its keys, one key per
//     thread; any number of tokens.
//   block_main (BLOCK, needs SUBGROUPS), for prefill: one workgroup per QUERIES consecutive
//     tokens of a head; WG is a multiple of HEAD_DIM / 4.
//   split_partial (SPLIT) + split_combine (MERGE), for decode: flash-decoding. The one query's keys are
//     cut into up to N_SPLITS slices of at least MIN_SLICE_KEYS keys, one workgroup per
//     (QUERIES consecutive query heads of one kv head, slice) leaves an unnormalized partial per
//     query head (its running max, sum and weighted values), and a workgroup per query head
//     merges them, so a long context spreads over many workgroups instead of walking serially
//     in a few. Workgroups past the filled slices only mark theirs empty. QUERIES > 1 (grouped
//     query heads, with SUBGROUPS) reads each key and value row once for all the heads that
//     share it instead of once per head; without subgroups QUERIES is 1 and the reductions are
//     trees in shared memory.
//     With ROPE_STORE, split_partial also takes over fused_qk_rope_store.wgsl's work for the
//     step: each workgroup norms (QK_NORM) and rotates its query heads' raw rows itself, and
//     the workgroups whose slice holds the step's position rotate its key and store it and its
//     value in the cache before reading them (one per kv head where QUERIES is the whole group).
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

const COLUMNS = HEAD_DIM / 4u;
// Whole groups of COLUMNS threads; where COLUMNS does not divide WG (heads of 96 values: 24
// columns, 10 groups of 256 threads) the threads past the last group only join the reductions.
const GROUPS = WG / COLUMNS;
const NO_SCORE = -3.0e38;

// The workgroup's queries, scaled: [query][vec4 column].
var<workgroup> q_block: array<vec4<f32>, QUERIES * COLUMNS>;
// A tile's probabilities: [query][key in tile].
var<workgroup> tile_probs: array<f32, QUERIES * WG>;

// Fills q_block with the query rows `stride` values apart from element `first`, scaled; rows
// from `n_queries` on are zeros.
fn load_queries(lid: u32, first: u32, stride: u32, n_queries: u32) {
    for (var i = lid; i < QUERIES * COLUMNS; i += WG) {
        let query = i / COLUMNS;
        var value = vec4<f32>(0.0);
        if (query < n_queries) {
            let base = first + query * stride + 4u * (i % COLUMNS);
            value = vec4<f32>(q[base], q[base + 1u], q[base + 2u], q[base + 3u]) * params.scale;
        }
        q_block[i] = value;
    }
    workgroupBarrier();
}

#ifdef BLOCK
#include "attention_queries.wgsl"

// Keys go a tile of WG at a time: thread j scores key j against every query of the block
// (one read of its row), and attend_tile adds the tile's values.
@compute @workgroup_size(WG)
fn block_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    let thread = Thread(lid, lane, subgroup, subgroups);
    let item = wid.x + wid.y * nwg.x;
    let blocks = (step.n_tokens + QUERIES - 1u) / QUERIES;
    if (item >= blocks * params.n_heads) {
        return;
    }
    let head = item % params.n_heads;
    let t0 = (item / params.n_heads) * QUERIES;
    let n_queries = min(QUERIES, step.n_tokens - t0);
    load_queries(lid, (t0 * params.n_heads + head) * HEAD_DIM, params.n_heads * HEAD_DIM, n_queries);
    let kv_stride = params.n_kv_heads * COLUMNS;
    let kv_base = (head / (params.n_heads / params.n_kv_heads)) * COLUMNS;
    let pos0 = step.pos + t0;
    let end = pos0 + n_queries;
    var state = no_keys_yet();
    for (var tile = first_key(pos0); tile < end; tile += WG) {
        let key_pos = tile + lid;
        var dots: array<vec4<f32>, QUERIES>;
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
        attend_tile(&state, scores, thread, tile, min(WG, end - tile), kv_stride, kv_base);
    }

    let sums = combine_queries(state.sum, true, thread);
    for (var query = 0u; query < QUERIES; query++) {
        let total = sum_over_groups(lid, state.acc[query]);
        if (lid < COLUMNS && query < n_queries) {
            out[((t0 + query) * params.n_heads + head) * COLUMNS + lid] = total / sums[query];
        }
    }
}
#endif
#ifndef SPLIT
#ifndef BLOCK
#include "workgroup_reduce.wgsl"

const DIMS_PER_THREAD = (HEAD_DIM + WG - 1u) / WG;

// Online-softmax state of one workgroup: the max and sum of its scores, and its thread's
// output dimensions lid + i·WG weighted by exp(score - max), not yet divided by the sum.
struct Attended {
    max: f32,
    sum: f32,
    acc: array<f32, DIMS_PER_THREAD>,
}

// Attends the query in q_block over key positions first..end of kv head `kv_head`.
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
            for (var d = 0u; d < COLUMNS; d++) {
                dot4 += q_block[d] * vec4<f32>(k_cache[k_base + d]);
            }
            score = dot4.x + dot4.y + dot4.z + dot4.w;
        }
        let new_max = max(state.max, workgroup_max(lid, score));
        var p = 0.0;
        if (key_pos < end) {
            p = exp(score - new_max);
        }
        tile_probs[lid] = p;
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
                    sum += tile_probs[j] * f32(v_cache[v_index]);
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
    load_queries(lid, q_base, HEAD_DIM, 1u);
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
#ifdef SUBGROUPS
#ifdef QK_NORM
// The key's norm: a tree, in only the one workgroup per kv head that stores the key.
#include "workgroup_reduce.wgsl"
#endif
#else
#include "workgroup_reduce.wgsl"
#endif
#include "attention_queries.wgsl"

#ifdef ROPE_STORE
#include "qk_rope.wgsl"

// Four rotated values of staged row `row` from element 4·column.
fn rotated4(row: u32, column: u32, scale: f32, cs_base: u32) -> vec4<f32> {
    let d = 4u * column;
    return vec4<f32>(rotated(row, d, scale, cs_base), rotated(row, d + 1u, scale, cs_base), rotated(row, d + 2u, scale, cs_base), rotated(row, d + 3u, scale, cs_base));
}

// As load_queries, for the raw rows of the QUERIES query heads from `first_head` at position
// `pos`, each normed and rotated first; with stores_key (uniform over the workgroup) also
// rotates the step's key of `kv_head` into the cache at `pos`, with its value, visible to the
// workgroup afterwards. Every thread calls it.
fn load_rotated_queries(thread: Thread, first_head: u32, kv_head: u32, pos: u32, stores_key: bool) {
    let lid = thread.lid;
    let sums = stage_rows(lid, first_head * HEAD_DIM, kv_head * HEAD_DIM, true, stores_key);
    // Without QK_NORM the rows are rotated as they are and the scales go unused.
    var q_scales: array<f32, QUERIES>;
    var k_scale: f32;
#ifdef QK_NORM
    // One reduction for all the query rows.
    let q_sums = combine_queries(sums.queries, true, thread);
    for (var query = 0u; query < QUERIES; query++) {
        q_scales[query] = norm_scale(q_sums[query]);
    }
    if (stores_key) {
        k_scale = norm_scale(workgroup_sum(lid, sums.key));
    }
#else
    workgroupBarrier();
#endif
    let cs_base = rope_base(pos);
    for (var i = lid; i < QUERIES * COLUMNS; i += WG) {
        let query = i / COLUMNS;
        q_block[i] = rotated4(query, i % COLUMNS, q_scales[query], cs_base) * params.scale;
    }
    if (stores_key) {
        let slot = ((pos % params.cache_len) * params.n_kv_heads + kv_head) * COLUMNS;
        for (var column = lid; column < COLUMNS; column += WG) {
            k_cache[slot + column] = vec4<kv_t>(rotated4(KEY_ROW, column, k_scale, cs_base));
            let d = kv_head * HEAD_DIM + 4u * column;
            v_cache[slot + column] = vec4<kv_t>(vec4<f32>(v[d], v[d + 1u], v[d + 2u], v[d + 3u]));
        }
    }
    storageBarrier();
    workgroupBarrier();
}
#endif

// The scores of key tile + lid against every query for lid < keys_in_tile (NO_SCORE for the
// others). A decode slice often holds only a few keys: one thread walking a key's whole row
// would chain HEAD_DIM / 4 loads, so each key gets the most threads the tile leaves it (a
// power of two up to a thread per vector), which read neighbouring vectors, dot each with
// every query and sum the partial dots in `tile_probs`. The caller reduces over the workgroup
// before `tile_probs` is written again.
fn tile_scores(lid: u32, tile: u32, keys_in_tile: u32, kv_stride: u32, kv_base: u32) -> array<f32, QUERIES> {
    var per_key = 1u;
    while (per_key < COLUMNS && keys_in_tile * per_key * 2u <= WG) {
        per_key *= 2u;
    }
    let key = lid / per_key;
    let part = lid % per_key;
    var dots: array<vec4<f32>, QUERIES>;
    if (key < keys_in_tile) {
        let k_base = ((tile + key) % params.cache_len) * kv_stride + kv_base;
        for (var d = part; d < COLUMNS; d += per_key) {
            let k = vec4<f32>(k_cache[k_base + d]);
            for (var query = 0u; query < QUERIES; query++) {
                dots[query] += q_block[query * COLUMNS + d] * k;
            }
        }
    }
    for (var query = 0u; query < QUERIES; query++) {
        tile_probs[query * WG + lid] = dot(dots[query], vec4<f32>(1.0));
    }
    workgroupBarrier();
    for (var stride = per_key / 2u; stride > 0u; stride >>= 1u) {
        if (part < stride) {
            for (var query = 0u; query < QUERIES; query++) {
                tile_probs[query * WG + lid] += tile_probs[query * WG + lid + stride];
            }
        }
        workgroupBarrier();
    }
    var scores: array<f32, QUERIES>;
    for (var query = 0u; query < QUERIES; query++) {
        scores[query] = NO_SCORE;
        if (lid < keys_in_tile) {
            scores[query] = tile_probs[query * WG + lid * per_key];
        }
    }
    return scores;
}

// Workgroup (QUERIES consecutive query heads of one kv head, slice) for the step's single
// token; an empty slice leaves sum 0 for each head. Scores come from tile_scores, the values
// from attend_tile, whose thread groups keep each thread's chain of dependent loads short.
@compute @workgroup_size(WG)
fn split_partial(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#ifdef SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    let thread = Thread(lid, lane, subgroup, subgroups);
#else
) {
    let thread = Thread(lid, 0u, 0u, 1u);
#endif
    let first_head = (wid.x / N_SPLITS) * QUERIES;
    let slice = wid.x % N_SPLITS;
    let q_pos = step.pos;
    let first = first_key(q_pos);
    // Slices of at least MIN_SLICE_KEYS keys: a short context fills only the first few, and
    // the empty rest leave at once (the merge skips them).
    let keys_per_slice = max((q_pos + 1u - first + N_SPLITS - 1u) / N_SPLITS, MIN_SLICE_KEYS);
    let slice_first = min(first + slice * keys_per_slice, q_pos + 1u);
    let slice_end = min(slice_first + keys_per_slice, q_pos + 1u);
    if (slice_first == slice_end) {
        if (lid < QUERIES) {
            split_stats[(first_head + lid) * N_SPLITS + slice] = vec2<f32>(NO_SCORE, 0.0);
        }
        return;
    }
    let kv_head = first_head / (params.n_heads / params.n_kv_heads);
#ifdef ROPE_STORE
    load_rotated_queries(thread, first_head, kv_head, q_pos, slice_end == q_pos + 1u);
#else
    load_queries(lid, first_head * HEAD_DIM, HEAD_DIM, QUERIES);
#endif
    let kv_stride = params.n_kv_heads * COLUMNS;
    let kv_base = kv_head * COLUMNS;
    var state = no_keys_yet();
    for (var tile = slice_first; tile < slice_end; tile += WG) {
        let keys_in_tile = min(WG, slice_end - tile);
        let scores = tile_scores(lid, tile, keys_in_tile, kv_stride, kv_base);
        attend_tile(&state, scores, thread, tile, keys_in_tile, kv_stride, kv_base);
    }
    let sums = combine_queries(state.sum, true, thread);
    for (var query = 0u; query < QUERIES; query++) {
        let item = (first_head + query) * N_SPLITS + slice;
        let total = sum_over_groups(lid, state.acc[query]);
        if (lid < COLUMNS) {
            split_acc[item * COLUMNS + lid] = total;
        }
        if (lid == 0u) {
            split_stats[item] = vec2<f32>(state.max[query], sums[query]);
        }
    }
}
#endif
#endif
