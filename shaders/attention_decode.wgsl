// Decode attention (a step of one token) split over key slices, flash-decoding style.
// Entry points:
//   split_partial: one workgroup per (kv head, pack of up to four of its query heads, key
//     slice). A thread holds one 16-byte chunk of a key row (8 f16 values with F16, else 4 f32)
//     for every query of the pack at once: the pack's queries are the four columns of its
//     matrices and the four components of its vectors, so each key and value row is read once
//     for them all (grouped-query attention) without per-query arrays, which the GPU compilers
//     put in slow local memory. A team of LANES threads (the row's chunks, rounded up to a power
//     of two; the lanes past the row hold zeros) covers a row, and the workgroup's STREAMS teams
//     walk the slice's keys two at a time each, both rows' loads in flight together, each with
//     its own online softmax; at the end the streams are merged and the workgroup leaves, per
//     query head, its slice's (max, sum) and values weighted by exp(score - max), unnormalized.
//     With ROPE_STORE it also does fused_qk_rope_store.wgsl's work for the step: each
//     workgroup norms (QK_NORM) and rotates its raw queries itself, and the workgroups whose
//     slice holds the step's position rotate the key and store it and the value in the cache,
//     taking them from registers for that position rather than reading the cache back (a
//     device-scope barrier between the stores and the reads was on the step's critical path).
//     Each round's key and value rows are loaded a round ahead, the first before the queries
//     are staged (H200, tg128 at depth 4096: Llama 3.2 3B +2%, Qwen3 4B +2.5%, Qwen2.5 7B
//     +1.9%; at depth 0 +0.4-0.8%).
//   head_partial (PER_HEAD): as split_partial with one workgroup per (query head, key slice),
//     a tile of WG keys at a time; for the shapes where packs do not pay.
//   split_combine (MERGE): one workgroup per query head rescales either kernel's slices to the
//     overall max and normalizes, each thread's slices' values loaded alongside the stats; with
//     Q8_OUT it writes the output in Q8 form as well. With
//     PREFILL it merges the key splits of attention_flash.wgsl instead, a workgroup per (token,
//     head) row of the step, over the splits the step took (none where it took one).
// A team's sums go through subgroup shuffles (SUBGROUPS: a team lies within a subgroup) or a
// tree in shared memory.
#include "step.wgsl"

const COLUMNS = HEAD_DIM / 4u;
const NO_SCORE = -3.0e38;

#ifdef MERGE
// [rows, N_SPLITS, COLUMNS] weighted value sums and [rows, N_SPLITS] (max, sum), a row per query
// head (with PREFILL per token and head, and the step's splits for N_SPLITS).
@group(0) @binding(0) var<storage, read> split_acc: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> split_stats: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
#ifdef PREFILL
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> params: Params;
#include "attention_params.wgsl"
#include "flash_splits.wgsl"
#endif

// Whole groups of COLUMNS threads; where COLUMNS does not divide WG (heads of 96 values: 24
// columns, 10 groups of 256 threads) the threads past the last group only join the reductions.
const GROUPS = WG / COLUMNS;
// Slices a thread sums at most.
const SLICES_PER_GROUP = (N_SPLITS + GROUPS - 1u) / GROUPS;

var<workgroup> weights: array<f32, N_SPLITS>;
var<workgroup> group_sums: array<vec4<f32>, WG>;

#ifdef Q8_OUT
// The output in Q8 form as well (q8_block.wgsl), for the products that read it: a head holds
// whole 32-value blocks.
@group(0) @binding(3) var<storage, read_write> q8_words: array<u32>;
@group(0) @binding(4) var<storage, read_write> q8_scales: array<f32>;
#include "q8_block.wgsl"
#endif

// Thread (group g, column c) sums slices g, g + GROUPS, … of column c, so no thread walks all
// slices.
@compute @workgroup_size(WG)
fn split_combine(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
#ifdef PREFILL
    let head = wid.x + wid.y * nwg.x;
    let splits = step_splits();
    // (Two returns: see attention_flash.wgsl.)
    if (head >= step.n_tokens * params.n_heads) {
        return;
    }
    if (splits == 1u) {
        return;
    }
#else
    let head = wid.x;
    let splits = N_SPLITS;
#endif
    let stats_base = head * splits;
    let column = lid % COLUMNS;
    let group = lid / COLUMNS;
    // The thread's slices' values are loaded with the stats rather than after them, so the
    // merge waits on one round of loads.
    var slice_values: array<vec4<f32>, SLICES_PER_GROUP>;
    for (var i = 0u; i < SLICES_PER_GROUP; i++) {
        let s = group + i * GROUPS;
        if (s < splits && group < GROUPS) {
            slice_values[i] = split_acc[(stats_base + s) * COLUMNS + column];
        }
    }
    var stats = vec2<f32>(NO_SCORE, 0.0);
    if (lid < splits) {
        stats = split_stats[stats_base + lid];
        weights[lid] = stats.x;
    }
    workgroupBarrier();
    var overall_max = NO_SCORE;
    for (var s = 0u; s < splits; s++) {
        overall_max = max(overall_max, weights[s]);
    }
    workgroupBarrier();
    if (lid < splits) {
        // An empty slice has sum 0: weight 0.
        weights[lid] = select(0.0, exp(stats.x - overall_max), stats.y > 0.0);
        group_sums[lid] = vec4<f32>(stats.y * weights[lid]);
    }
    workgroupBarrier();
    var total = 0.0;
    for (var s = 0u; s < splits; s++) {
        total += group_sums[s].x;
    }
    workgroupBarrier();
    var value = vec4<f32>(0.0);
    for (var i = 0u; i < SLICES_PER_GROUP; i++) {
        let s = group + i * GROUPS;
        // An empty slice leaves its values unwritten.
        if (s < splits && group < GROUPS && weights[s] > 0.0) {
            value += slice_values[i] * weights[s];
        }
    }
    group_sums[lid] = value;
    workgroupBarrier();
    var result = vec4<f32>(0.0);
    if (group == 0u) {
        for (var g = 1u; g < GROUPS; g++) {
            value += group_sums[g * COLUMNS + column];
        }
        result = value / total;
        out[head * COLUMNS + column] = result;
    }
#ifdef Q8_OUT
    // Group 0's threads hold the head's vectors in order, 8 to a block.
    let largest = q8_block_largest(lid, result);
    if (group == 0u) {
        q8_store(head * COLUMNS + column, result, largest);
    }
#endif
}
#else
#include "attention_params.wgsl"

#ifdef PER_HEAD
#ifdef F16
alias cache_t = vec4<f16>;
#else
alias cache_t = vec4<f32>;
#endif
#else
// 16-byte chunks: 8 f16 values (F16) or 4 f32.
alias cache_t = vec4<u32>;
#endif
// q: [n_heads, HEAD_DIM] (as vec4s where the packed kernel reads it itself); caches:
// [cache_len, n_kv_heads, HEAD_DIM].
#ifdef PER_HEAD
@group(0) @binding(0) var<storage, read> q: array<f32>;
#else
#ifdef ROPE_STORE
@group(0) @binding(0) var<storage, read> q: array<f32>;
#else
@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
#endif
#endif
#ifdef ROPE_STORE
@group(0) @binding(1) var<storage, read_write> k_cache: array<cache_t>;
@group(0) @binding(2) var<storage, read_write> v_cache: array<cache_t>;
#else
@group(0) @binding(1) var<storage, read> k_cache: array<cache_t>;
@group(0) @binding(2) var<storage, read> v_cache: array<cache_t>;
#endif
@group(0) @binding(3) var<storage, read_write> split_acc: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> split_stats: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read> step: Step;
// Defines rather than a uniform (binding 6 is left free), whose load would stand beside the
// step's before the first key loads.
const params = Params(P_N_HEADS, P_N_KV_HEADS, P_CACHE_LEN, P_WINDOW, P_SCALE, P_ROT_DIM, P_MAX_POSITIONS, P_EPS);
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

// Query heads per workgroup of the packed kernel: the components of a vec4.
const PACK = 4u;

#ifdef ROPE_STORE
#ifdef PER_HEAD
// The head's query row, and the key.
const QK_ROWS = 2u;
#else
// One staged row per query of a pack, and the key.
const QK_ROWS = PACK + 1u;
#endif
#include "qk_rope.wgsl"

// Four rotated values of staged row `row` from element 4·column.
fn rotated4(row: u32, column: u32, cs_base: u32) -> vec4<f32> {
    let d = 4u * column;
    return vec4<f32>(rotated(row, d, cs_base), rotated(row, d + 1u, cs_base), rotated(row, d + 2u, cs_base), rotated(row, d + 3u, cs_base));
}

// Column `column` of the step's raw value row of `kv_head`.
fn value4(kv_head: u32, column: u32) -> vec4<f32> {
    let d = kv_head * HEAD_DIM + 4u * column;
    return vec4<f32>(v[d], v[d + 1u], v[d + 2u], v[d + 3u]);
}
#endif

// Keys first..end of `slice` for the step's query: slices of at least MIN_SLICE_KEYS keys, so a
// short context fills only the first few and the empty rest (first == end) leave at once (the
// merge skips them).
fn slice_keys(slice: u32) -> vec2<u32> {
    let q_pos = step.pos;
    let first = first_key(q_pos);
    let keys_per_slice = max((q_pos + 1u - first + N_SPLITS - 1u) / N_SPLITS, MIN_SLICE_KEYS);
    let slice_first = min(first + slice * keys_per_slice, q_pos + 1u);
    return vec2<u32>(slice_first, min(slice_first + keys_per_slice, q_pos + 1u));
}

#ifdef PER_HEAD
// One workgroup per (query head, key slice), for the shapes where packs do not pay (see
// decode_attention.rs).
#include "workgroup_reduce.wgsl"

var<workgroup> q_shared: array<vec4<f32>, COLUMNS>;
var<workgroup> probs: array<f32, WG>;

fn load_query(lid: u32, q_base: u32) {
    for (var d = lid; d < COLUMNS; d += WG) {
        let i = q_base + 4u * d;
        q_shared[d] = vec4<f32>(q[i], q[i + 1u], q[i + 2u], q[i + 3u]) * params.scale;
    }
    workgroupBarrier();
}

const GROUPS = WG / COLUMNS;

var<workgroup> group_sums: array<vec4<f32>, WG>;

#ifdef ROPE_STORE
// As load_query, for the raw query of `head` at position `pos`, normed and rotated first;
// with stores_key (uniform over the workgroup) also rotates the step's key of `kv_head` into
// the cache at `pos`, with its value, visible to the workgroup afterwards. Both raw rows are
// read in one round of loads. Every thread calls it.
fn load_rotated_query(lid: u32, head: u32, kv_head: u32, pos: u32, stores_key: bool) {
    stage_rows(lid, head * HEAD_DIM, kv_head * HEAD_DIM, 1u, stores_key);
    let cs_base = rope_base(pos);
    let slot = ((pos % params.cache_len) * params.n_kv_heads + kv_head) * COLUMNS;
    for (var column = lid; column < COLUMNS; column += WG) {
        q_shared[column] = rotated4(0u, column, cs_base) * params.scale;
        if (stores_key) {
            k_cache[slot + column] = cache_t(rotated4(KEY_ROW, column, cs_base));
            v_cache[slot + column] = cache_t(value4(kv_head, column));
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
fn head_partial(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let head = wid.x / N_SPLITS;
    let slice = wid.x % N_SPLITS;
    let q_pos = step.pos;
    let keys = slice_keys(slice);
    let slice_first = keys.x;
    let slice_end = keys.y;
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
#else
#ifdef F16
const VEC4S_PER_CHUNK = 2u;
#else
const VEC4S_PER_CHUNK = 1u;
#endif
const ROW_CHUNKS = COLUMNS / VEC4S_PER_CHUNK;
const STREAMS = WG / LANES;

// Each stream's (max, sum) per query, and its threads' weighted values (the chunks' first
// halves, then with F16 their second).
var<workgroup> stream_stats: array<vec4<f32>, 2u * STREAMS>;
var<workgroup> stream_acc: array<mat4x4<f32>, VEC4S_PER_CHUNK * WG>;
#ifndef SUBGROUPS
var<workgroup> team_slots: array<vec4<f32>, 2u * WG>;
#endif

// The first four values of a chunk, and with F16 the other four, as f32.
fn first_half(chunk: vec4<u32>) -> vec4<f32> {
#ifdef F16
    return vec4<f32>(unpack2x16float(chunk.x), unpack2x16float(chunk.y));
#else
    return bitcast<vec4<f32>>(chunk);
#endif
}

#ifdef F16
fn second_half(chunk: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(chunk.z), unpack2x16float(chunk.w));
}
#endif

// The scores of a round's two keys for each query of the pack.
struct RoundScores {
    first: vec4<f32>,
    second: vec4<f32>,
}

// Each lane's parts of the scores summed over its team; every lane gets the sums. Every thread
// calls it.
fn team_sums(parts: RoundScores, lid: u32, lane: u32) -> RoundScores {
    var sums = parts;
#ifdef SUBGROUPS
    for (var mask = LANES / 2u; mask > 0u; mask >>= 1u) {
        sums.first += subgroupShuffleXor(sums.first, mask);
        sums.second += subgroupShuffleXor(sums.second, mask);
    }
#else
    team_slots[lid] = sums.first;
    team_slots[WG + lid] = sums.second;
    workgroupBarrier();
    for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
        if (lane < stride) {
            team_slots[lid] += team_slots[lid + stride];
            team_slots[WG + lid] += team_slots[WG + lid + stride];
        }
        workgroupBarrier();
    }
    sums = RoundScores(team_slots[lid - lane], team_slots[WG + lid - lane]);
    workgroupBarrier();
#endif
    return sums;
}

// Column j of `acc` (query j's values) rescaled by correction[j], plus the round's two value
// vectors weighted by that query's weights.
fn accumulate(acc: mat4x4<f32>, correction: vec4<f32>, first: vec4<f32>, w_first: vec4<f32>, second: vec4<f32>, w_second: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(
        acc[0] * correction.x + first * w_first.x + second * w_second.x,
        acc[1] * correction.y + first * w_first.y + second * w_second.y,
        acc[2] * correction.z + first * w_first.z + second * w_second.z,
        acc[3] * correction.w + first * w_first.w + second * w_second.w,
    );
}

// Column j of `m` times weight[j].
fn scale_columns(m: mat4x4<f32>, weight: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(m[0] * weight.x, m[1] * weight.y, m[2] * weight.z, m[3] * weight.w);
}

#ifdef ROPE_STORE
#ifdef TURN_ROWS
// With TURN_ROWS (a norm, or NEOX pairs half a head apart) the staged rows are normed and
// rotated once, each value by one thread, into `turned`: rotated4 would have each thread work
// out its chunk of every row of the pack, reading the norm weights and each pair's partner
// across the head, and the whole workgroup wait on the slowest.
var<workgroup> turned: array<f32, QK_ROWS * HEAD_DIM>;

// Staged rows 0..queries (and KEY_ROW with `with_key`) into `turned`, visible to the workgroup
// afterwards. Every thread calls it.
fn turn_rows(lid: u32, queries: u32, with_key: bool, cs_base: u32) {
    for (var i = lid; i < QK_ROWS * HEAD_DIM; i += WG) {
        let row = i / HEAD_DIM;
        if (row < queries || (row == KEY_ROW && with_key)) {
            turned[i] = rotated(row, i % HEAD_DIM, cs_base);
        }
    }
    workgroupBarrier();
}
#endif

// Four values of staged row `row` normed and rotated, from element 4·column.
fn query4(row: u32, column: u32, cs_base: u32) -> vec4<f32> {
#ifdef TURN_ROWS
    let d = row * HEAD_DIM + 4u * column;
    return vec4<f32>(turned[d], turned[d + 1u], turned[d + 2u], turned[d + 3u]);
#else
    return rotated4(row, column, cs_base);
#endif
}

#ifdef F16
// Two values rounded to f16 as every other cache store rounds them (pack2x16float's own
// rounding is the driver's choice), then packed: exact.
fn pack_halves(values: vec2<f32>) -> u32 {
    return pack2x16float(vec2<f32>(vec2<f16>(values)));
}
#endif

// A cache chunk of values `first` and, with F16, `second`.
fn chunk_of(first: vec4<f32>, second: vec4<f32>) -> vec4<u32> {
#ifdef F16
    return vec4<u32>(pack_halves(first.xy), pack_halves(first.zw), pack_halves(second.xy), pack_halves(second.zw));
#else
    return bitcast<vec4<u32>>(first);
#endif
}

#else
// Four values of query row `row` of the pack (q row head0 + row) from element 4·column.
fn query4(row: u32, column: u32, head0: u32) -> vec4<f32> {
    return q[(head0 + row) * COLUMNS + column];
}
#endif

// Query `row` of the pack at `column`, scaled, or zeros past `queries` (whose reads stay
// within the pack, so that all of them can be in flight together).
fn packed_query(row: u32, column: u32, queries: u32, at: u32) -> vec4<f32> {
    return query4(min(row, queries - 1u), column, at) * select(0.0, params.scale, row < queries);
}

// Column j: query j's four values from row column `column` (zero past `queries`, or where
// `queries` is 0), scaled. `at` is the position's first table entry (ROPE_STORE) or the pack's
// first head.
fn pack_queries(column: u32, queries: u32, at: u32) -> mat4x4<f32> {
    let live = max(queries, 1u);
    let m = mat4x4<f32>(packed_query(0u, column, live, at), packed_query(1u, column, live, at), packed_query(2u, column, live, at), packed_query(3u, column, live, at));
    return m * select(0.0, 1.0, queries > 0u);
}

// A round's two key rows and their value rows for one thread: keys `key` and key + STREAMS,
// each at most the slice's last.
struct RoundRows {
    k_a: vec4<u32>,
    k_b: vec4<u32>,
    v_a: vec4<u32>,
    v_b: vec4<u32>,
}

fn round_rows(key: u32, slice_end: u32, kv_stride: u32, kv_base: u32) -> RoundRows {
    let row_a = (min(key, slice_end - 1u) % params.cache_len) * kv_stride + kv_base;
    let row_b = (min(key + STREAMS, slice_end - 1u) % params.cache_len) * kv_stride + kv_base;
    return RoundRows(k_cache[row_a], k_cache[row_b], v_cache[row_a], v_cache[row_b]);
}

@compute @workgroup_size(WG)
fn split_partial(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let item = wid.x + wid.y * nwg.x;
    let group = params.n_heads / params.n_kv_heads;
    let packs = (group + PACK - 1u) / PACK;
    if (item >= params.n_kv_heads * packs * N_SPLITS) {
        return;
    }
    let slice = item % N_SPLITS;
    let kv_head = item / N_SPLITS / packs;
    let pack = item / N_SPLITS % packs;
    let head0 = kv_head * group + pack * PACK;
    let queries = min(PACK, group - pack * PACK);
    let q_pos = step.pos;
    let keys = slice_keys(slice);
    let slice_first = keys.x;
    let slice_end = keys.y;
    if (slice_first == slice_end) {
        if (lid < queries) {
            split_stats[(head0 + lid) * N_SPLITS + slice] = vec2<f32>(NO_SCORE, 0.0);
        }
        return;
    }
    let lane = lid % LANES;
    let stream = lid / LANES;
    // Lanes past the row re-read its last chunk with zero queries.
    let chunk = min(lane, ROW_CHUNKS - 1u);
    let column = chunk * VEC4S_PER_CHUNK;
    let in_row = lane < ROW_CHUNKS;
    let kv_stride = params.n_kv_heads * ROW_CHUNKS;
    let kv_base = kv_head * ROW_CHUNKS + chunk;
    // The first round's rows are in flight while the queries are staged and rotated.
    var next_rows = round_rows(slice_first + stream, slice_end, kv_stride, kv_base);
#ifdef ROPE_STORE
    let stores_key = slice_end == q_pos + 1u;
    stage_rows(lid, head0 * HEAD_DIM, kv_head * HEAD_DIM, queries, stores_key);
    let cs_base = rope_base(q_pos);
#ifdef TURN_ROWS
    turn_rows(lid, queries, stores_key, cs_base);
#endif
    // The step's key and value as the cache holds them, this thread's chunk: the rounds take
    // the step's position from here rather than from the cache, so the stores need no
    // barrier before the reads.
    var step_key = vec4<u32>();
    var step_value = vec4<u32>();
    if (stores_key) {
        let last = column + VEC4S_PER_CHUNK - 1u;
        step_key = chunk_of(query4(KEY_ROW, column, cs_base), query4(KEY_ROW, last, cs_base));
        step_value = chunk_of(value4(kv_head, column), value4(kv_head, last));
        if (stream == 0u && in_row) {
            let slot = ((q_pos % params.cache_len) * params.n_kv_heads + kv_head) * ROW_CHUNKS;
            k_cache[slot + chunk] = step_key;
            v_cache[slot + chunk] = step_value;
        }
    }
    let at = cs_base;
#else
    let at = head0;
#endif
    let live = select(0u, queries, in_row);
    let q_first = pack_queries(column, live, at);
#ifdef F16
    let q_second = pack_queries(column + 1u, live, at);
#endif

    var running_max = vec4<f32>(NO_SCORE);
    var running_sum = vec4<f32>(0.0);
    var acc_first = mat4x4<f32>();
#ifdef F16
    var acc_second = mat4x4<f32>();
#endif
    // Every stream takes the same number of rounds (team_sums may need the whole workgroup); a
    // key past the slice re-reads its last key and weighs nothing. Each round loads the next
    // one's rows before it works on its own.
    for (var round_first = slice_first; round_first < slice_end; round_first += 2u * STREAMS) {
        let key = round_first + stream;
        var kv = next_rows;
        if (round_first + 2u * STREAMS < slice_end) {
            next_rows = round_rows(key + 2u * STREAMS, slice_end, kv_stride, kv_base);
        }
#ifdef ROPE_STORE
        if (stores_key) {
            // The step's position is the slice's last key, which keys past it re-read too.
            kv.k_a = select(kv.k_a, step_key, key >= q_pos);
            kv.v_a = select(kv.v_a, step_value, key >= q_pos);
            kv.k_b = select(kv.k_b, step_key, key + STREAMS >= q_pos);
            kv.v_b = select(kv.v_b, step_value, key + STREAMS >= q_pos);
        }
#endif
        let seen = vec2<bool>(key < slice_end, key + STREAMS < slice_end);
        var parts = RoundScores(first_half(kv.k_a) * q_first, first_half(kv.k_b) * q_first);
#ifdef F16
        parts.first += second_half(kv.k_a) * q_second;
        parts.second += second_half(kv.k_b) * q_second;
#endif
        let scores = team_sums(parts, lid, lane);
        let score_a = select(vec4<f32>(NO_SCORE), scores.first, seen.x);
        let score_b = select(vec4<f32>(NO_SCORE), scores.second, seen.y);
        let round_max = max(running_max, max(score_a, score_b));
        let correction = exp(running_max - round_max);
        let w_a = select(vec4<f32>(0.0), exp(score_a - round_max), seen.x);
        let w_b = select(vec4<f32>(0.0), exp(score_b - round_max), seen.y);
        running_sum = running_sum * correction + w_a + w_b;
        running_max = round_max;
        acc_first = accumulate(acc_first, correction, first_half(kv.v_a), w_a, first_half(kv.v_b), w_b);
#ifdef F16
        acc_second = accumulate(acc_second, correction, second_half(kv.v_a), w_a, second_half(kv.v_b), w_b);
#endif
    }

    // The streams merged, each thread taking whole outputs: vec4 `half` of query j's values at
    // chunk c, summed over the streams. A stream that saw no key has max NO_SCORE and weighs
    // nothing; some stream saw one, since the slice is not empty.
    if (lane == 0u) {
        stream_stats[stream] = running_max;
        stream_stats[STREAMS + stream] = running_sum;
    }
    stream_acc[lid] = acc_first;
#ifdef F16
    stream_acc[WG + lid] = acc_second;
#endif
    workgroupBarrier();
    for (var o = lid; o < VEC4S_PER_CHUNK * PACK * ROW_CHUNKS; o += WG) {
        let c = o % ROW_CHUNKS;
        let j = o / ROW_CHUNKS % PACK;
        let half = o / (ROW_CHUNKS * PACK);
        if (j < queries) {
            var overall_max = NO_SCORE;
            for (var s = 0u; s < STREAMS; s++) {
                overall_max = max(overall_max, stream_stats[s][j]);
            }
            var value = vec4<f32>(0.0);
            var total = 0.0;
            for (var s = 0u; s < STREAMS; s++) {
                let weight = exp(stream_stats[s][j] - overall_max);
                value += stream_acc[half * WG + s * LANES + c][j] * weight;
                total += stream_stats[STREAMS + s][j] * weight;
            }
            let item = (head0 + j) * N_SPLITS + slice;
            split_acc[item * COLUMNS + c * VEC4S_PER_CHUNK + half] = value;
            if (c == 0u && half == 0u) {
                split_stats[item] = vec2<f32>(overall_max, total);
            }
        }
    }
}
#endif
#endif
