// Prefill attention on cooperative matrices (tensor cores: 16 × 16 × 16 products, f16 in, f32
// accumulate) over an f16 KV cache. A workgroup takes BR consecutive queries of one head and
// goes over their keys BC at a time, twice: the first pass finds each query's largest score,
// the second weighs the values by exp(score - max) into accumulators that never need
// rescaling. Flash attention does it in one pass by rescaling its accumulators whenever the
// max grows, but cooperative matrices have no elementwise operations to rescale with; the
// scores are computed twice instead, which the tensor cores can spare.
// Subgroup (row block r, slab s) owns output rows 16·r .. 16·r + 15 and dimensions
// SLAB·s .. SLAB·s + SLAB - 1 as 16 × 16 accumulators (SLAB 64: four, with SLAB_FRAGMENTS_2 and
// _4; 32: two, with _2; 16: one); the subgroups share out the BR × BC score fragments of each key
// tile. A tile's keys, then its values, are staged in shared memory by every thread at once in
// 16-byte loads, issued while the tensor cores work on the tile before: cooperative loads
// straight from the cache, one dependent load per product, left the kernel waiting on memory
// (an H200 ran it at ~15 TFLOPS), and loading the pieces as f16, two 8-byte loads each, instead
// of converting them made it 18-25% slower. HEAD_DIM must be a multiple of SLAB.
// The scalar part of a tile (its rows' maxima, then their weights) is what bounds the kernel
// (switched off, an H200's pp512 at depth 4096 took 60% less attention time on Llama 3.2 1B):
// each thread keeps to one row and its own four-key pieces of every tile, read and written four
// at a time, and carries its max and weight sum across tiles in registers, and the tiles every
// query of the block sees whole skip the per-key masks.
// With QUERY_REGISTERS (heads of 64, 96, 128 and 256) each subgroup loads its row block's query fragments
// once into registers and the subgroups of a row block share out its key blocks for the scores:
// the query tile is staged only on its way there, in the key tile's place (BR <= BC), and the
// shared memory it frees takes 64-key tiles, half the barriers a key.
// With KEY_SPLITS a step of few blocks shares out each block's keys among several workgroups
// (flash_splits.wgsl), each making both passes over its own run of whole tiles: a short step
// deep in a context would otherwise leave most of a large GPU idle, each workgroup walking
// every tile. A split leaves its rows' values weighted by exp(score - its max), unnormalized,
// with that max and the weights' sum, for split_combine (attention_decode.wgsl) to merge; where
// the step takes one split the kernel writes the output itself.
// WG = 32 · (BR / 16) · (HEAD_DIM / SLAB).
#include "step.wgsl"
#include "half_pack.wgsl"
#include "attention_params.wgsl"
#include "flash_splits.wgsl"

// q and out: [n_tokens, n_heads, HEAD_DIM]; caches: [cache_len, n_kv_heads, HEAD_DIM].
@group(0) @binding(0) var<storage, read> q: array<f32>;
// The caches' f16 values eight at a time.
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> params: Params;
#ifdef KEY_SPLITS
// Each split's partials of each (token, head) row: [n_tokens, n_heads, splits, HEAD_DIM] values
// and [n_tokens, n_heads, splits] (max, sum) for the step's splits, the layout split_combine
// reads.
@group(0) @binding(6) var<storage, read_write> split_acc: array<f32>;
@group(0) @binding(7) var<storage, read_write> split_stats: array<vec2<f32>>;
#endif

const FRAGMENT = 16u;
const ROW_BLOCKS = BR / FRAGMENT;
const KEY_BLOCKS = BC / FRAGMENT;
const SLABS = HEAD_DIM / SLAB;
const SUBGROUPS = ROW_BLOCKS * SLABS;
// Rows of the query tile are padded by 8 values so they start 16 bytes apart without all
// falling on the same banks.
const Q_STRIDE = HEAD_DIM + 8u;
// Rows of scores padded by SCORE_PAD values, so that the rows a quarter-subgroup reads four
// values a thread fall on different banks, and of weights by 8 (16 bytes).
const SCORE_STRIDE = BC + SCORE_PAD;
const WEIGHT_STRIDE = BC + 8u;
// Rows of the key or value tile in vec4<f16>, padded like the query tile's.
const KV_STRIDE = (HEAD_DIM + 8u) / 4u;
// 16-byte pieces of a cache row, and of a tile; pieces each thread copies of a tile.
const ROW_PIECES = HEAD_DIM / 8u;
const TILE_PIECES = BC * ROW_PIECES;
const COPIES = (TILE_PIECES + WG - 1u) / WG;
// Threads that share out a row's keys of a tile, consecutive lanes of one subgroup: a power
// of two (ROW_LANES, set to the largest one up to WG / BR and BC / 4), so that threads from BR · PER_ROW
// on only join the passes' shuffles.
const PER_ROW = ROW_LANES;
// Four-key pieces of a tile row each of its PER_ROW threads takes: part, part + PER_ROW, ….
const ROW_PIECES_PER_LANE = BC / 4u / PER_ROW;
const NO_SCORE = -3.0e38;

#ifndef QUERY_REGISTERS
// The block's queries, scaled: [row][dimension], the A operand of the scores.
var<workgroup> q_tile: array<f16, BR * Q_STRIDE>;
#endif
// The tile's keys or values: [key][dimension], the B operand of the scores (column-major) and
// of the values' product (row-major). With QUERY_REGISTERS it first holds the block's scaled
// queries ([row][dimension], BR <= BC), on their way to each subgroup's registers.
var<workgroup> kv_tile: array<vec4<f16>, BC * KV_STRIDE>;
// A key tile's scores: [row][key] four at a time; at the end, one output fragment per subgroup
// on its way to `out` (SCORES_LEN values, the larger of the two).
var<workgroup> scores: array<vec4<f32>, SCORES_LEN / 4>;
// Its weights exp(score - max), the A operand of the values' product: [row][key] four at a time.
var<workgroup> weights: array<vec4<f16>, BR * WEIGHT_STRIDE / 4>;
var<workgroup> row_max: array<f32, BR>;
var<workgroup> row_sum: array<f32, BR>;
#ifdef QUERY_REGISTERS
// The subgroup's row block of queries, dimensions 16·i .. 16·i + 15 in q<i>.
var<private> q0: coop_mat16x16<f16, A>;
var<private> q1: coop_mat16x16<f16, A>;
var<private> q2: coop_mat16x16<f16, A>;
var<private> q3: coop_mat16x16<f16, A>;
#ifdef QUERY_FRAGMENTS_6
var<private> q4: coop_mat16x16<f16, A>;
var<private> q5: coop_mat16x16<f16, A>;
#endif
#ifdef QUERY_FRAGMENTS_8
var<private> q6: coop_mat16x16<f16, A>;
var<private> q7: coop_mat16x16<f16, A>;
#endif
#ifdef QUERY_FRAGMENTS_16
var<private> q8: coop_mat16x16<f16, A>;
var<private> q9: coop_mat16x16<f16, A>;
var<private> q10: coop_mat16x16<f16, A>;
var<private> q11: coop_mat16x16<f16, A>;
var<private> q12: coop_mat16x16<f16, A>;
var<private> q13: coop_mat16x16<f16, A>;
var<private> q14: coop_mat16x16<f16, A>;
var<private> q15: coop_mat16x16<f16, A>;
#endif
#endif

// The pieces a thread copies of a tile: piece lid + c·WG in element c.
struct Pieces {
    p: array<vec4<u32>, COPIES>,
}

// Keys (or values) tile .. tile + BC - 1 of kv head `kv_base / HEAD_DIM`, each at its place in
// the ring (a tile may wrap it).
fn fetch(tile: u32, kv_base: u32, values: bool, lid: u32) -> Pieces {
    var pieces: Pieces;
    for (var c = 0u; c < COPIES; c++) {
        let piece = min(lid + c * WG, TILE_PIECES - 1u);
        let key = (tile + piece / ROW_PIECES) % params.cache_len;
        let at = (key * params.n_kv_heads * HEAD_DIM + kv_base) / 8u + piece % ROW_PIECES;
        if (values) {
            pieces.p[c] = v_cache[at];
        } else {
            pieces.p[c] = k_cache[at];
        }
    }
    return pieces;
}

// (Through f32 and back, exactly: naga's bitcast keeps the component count.)
fn stage(pieces: Pieces, lid: u32) {
    for (var c = 0u; c < COPIES; c++) {
        let piece = lid + c * WG;
        if (piece < TILE_PIECES) {
            let at = (piece / ROW_PIECES) * KV_STRIDE + (piece % ROW_PIECES) * 2u;
            let v = pieces.p[c];
            kv_tile[at] = vec4<f16>(vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)));
            kv_tile[at + 1u] = vec4<f16>(vec4<f32>(unpack2x16float(v.z), unpack2x16float(v.w)));
        }
    }
}

#ifndef QUERY_REGISTERS
// Scores of the staged keys against every query row, into `scores`.
fn tile_scores(subgroup: u32) {
    for (var fragment = subgroup; fragment < ROW_BLOCKS * KEY_BLOCKS; fragment += SUBGROUPS) {
        let row = (fragment / KEY_BLOCKS) * FRAGMENT;
        let key = (fragment % KEY_BLOCKS) * FRAGMENT;
        var s = coop_mat16x16<f32, C>();
        for (var d = 0u; d < HEAD_DIM; d += FRAGMENT) {
            let a = coopLoadT<coop_mat16x16<f16, A>>(&q_tile[row * Q_STRIDE + d], Q_STRIDE);
            let b = coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key * KV_STRIDE + d / 4u], KV_STRIDE);
            s = coopMultiplyAdd(a, b, s);
        }
        coopStoreT(s, &scores[(row * SCORE_STRIDE + key) / 4u], SCORE_STRIDE / 4u);
    }
}
#else
// Scores of the staged keys against the subgroup's row block, whose query fragments it holds:
// the subgroups of a row block share out its key blocks.
fn tile_scores(subgroup: u32) {
    let row = (subgroup / SLABS) * FRAGMENT;
    for (var block = subgroup % SLABS; block < KEY_BLOCKS; block += SLABS) {
        let key = block * FRAGMENT * KV_STRIDE;
        var s = coop_mat16x16<f32, C>();
        s = coopMultiplyAdd(q0, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key], KV_STRIDE), s);
        s = coopMultiplyAdd(q1, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 4u], KV_STRIDE), s);
        s = coopMultiplyAdd(q2, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 8u], KV_STRIDE), s);
        s = coopMultiplyAdd(q3, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 12u], KV_STRIDE), s);
#ifdef QUERY_FRAGMENTS_6
        s = coopMultiplyAdd(q4, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 16u], KV_STRIDE), s);
        s = coopMultiplyAdd(q5, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 20u], KV_STRIDE), s);
#endif
#ifdef QUERY_FRAGMENTS_8
        s = coopMultiplyAdd(q6, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 24u], KV_STRIDE), s);
        s = coopMultiplyAdd(q7, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 28u], KV_STRIDE), s);
#endif
#ifdef QUERY_FRAGMENTS_16
        s = coopMultiplyAdd(q8, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 32u], KV_STRIDE), s);
        s = coopMultiplyAdd(q9, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 36u], KV_STRIDE), s);
        s = coopMultiplyAdd(q10, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 40u], KV_STRIDE), s);
        s = coopMultiplyAdd(q11, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 44u], KV_STRIDE), s);
        s = coopMultiplyAdd(q12, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 48u], KV_STRIDE), s);
        s = coopMultiplyAdd(q13, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 52u], KV_STRIDE), s);
        s = coopMultiplyAdd(q14, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 56u], KV_STRIDE), s);
        s = coopMultiplyAdd(q15, coopLoad<coop_mat16x16<f16, B>>(&kv_tile[key + 60u], KV_STRIDE), s);
#endif
        coopStoreT(s, &scores[(row * SCORE_STRIDE + block * FRAGMENT) / 4u], SCORE_STRIDE / 4u);
    }
}
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
) {
    let item = wid.x + wid.y * nwg.x;
    let blocks = (step.n_tokens + BR - 1u) / BR;
    // The workgroups of a block, of which the first `splits` take a share of its keys.
    let per_block = work_splits();
    let split = item % per_block;
    let splits = step_splits();
    // (Not `||`, which naga takes for non-uniform: the returns must be uniform.)
    if (item >= blocks * params.n_heads * per_block) {
        return;
    }
    if (split >= splits) {
        return;
    }
    let head = item / per_block % params.n_heads;
    let t0 = (item / per_block / params.n_heads) * BR;
    let n_queries = min(BR, step.n_tokens - t0);
    let pos0 = step.pos + t0;
    let end = pos0 + n_queries;
    let kv_base = (head / (params.n_heads / params.n_kv_heads)) * HEAD_DIM;
    // The split's share of the whole tiles from the first one any query of the block sees. A
    // block of fewer tiles than the step's splits leaves some empty: they go over no keys and
    // leave sums of 0, which the merge weighs at nothing.
    let key_first = (first_key(pos0) / BC) * BC;
    let tiles = (end - key_first + BC - 1u) / BC;
    let split_first = key_first + tiles * split / splits * BC;
    let split_end = min(key_first + tiles * (split + 1u) / splits * BC, end);

    for (var i = lid; i < BR * HEAD_DIM / 4u; i += WG) {
        let row = i / (HEAD_DIM / 4u);
        let dim = (i % (HEAD_DIM / 4u)) * 4u;
        var value = vec4<f32>(0.0);
        if (row < n_queries) {
            let base = ((t0 + row) * params.n_heads + head) * HEAD_DIM + dim;
            value = vec4<f32>(q[base], q[base + 1u], q[base + 2u], q[base + 3u]) * params.scale;
        }
        let h = vec4<f16>(in_half_range(value));
#ifdef QUERY_REGISTERS
        kv_tile[row * KV_STRIDE + dim / 4u] = h;
#else
        let at = row * Q_STRIDE + dim;
        q_tile[at] = h.x;
        q_tile[at + 1u] = h.y;
        q_tile[at + 2u] = h.z;
        q_tile[at + 3u] = h.w;
#endif
    }
    workgroupBarrier();

    let row_block = (subgroup / SLABS) * FRAGMENT;
    let slab = (subgroup % SLABS) * SLAB;
#ifdef QUERY_REGISTERS
    let query = row_block * KV_STRIDE;
    q0 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query], KV_STRIDE);
    q1 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 4u], KV_STRIDE);
    q2 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 8u], KV_STRIDE);
    q3 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 12u], KV_STRIDE);
#ifdef QUERY_FRAGMENTS_6
    q4 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 16u], KV_STRIDE);
    q5 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 20u], KV_STRIDE);
#endif
#ifdef QUERY_FRAGMENTS_8
    q6 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 24u], KV_STRIDE);
    q7 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 28u], KV_STRIDE);
#endif
#ifdef QUERY_FRAGMENTS_16
    q8 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 32u], KV_STRIDE);
    q9 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 36u], KV_STRIDE);
    q10 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 40u], KV_STRIDE);
    q11 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 44u], KV_STRIDE);
    q12 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 48u], KV_STRIDE);
    q13 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 52u], KV_STRIDE);
    q14 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 56u], KV_STRIDE);
    q15 = coopLoadT<coop_mat16x16<f16, A>>(&kv_tile[query + 60u], KV_STRIDE);
#endif
    // The first key tile's staging overwrites the queries.
    workgroupBarrier();
#endif
    var o0 = coop_mat16x16<f32, C>();
#ifdef SLAB_FRAGMENTS_2
    var o1 = coop_mat16x16<f32, C>();
#endif
#ifdef SLAB_FRAGMENTS_4
    var o2 = coop_mat16x16<f32, C>();
    var o3 = coop_mat16x16<f32, C>();
#endif
    // The thread's row of the block and its part of the row's keys: threads from BR · PER_ROW
    // on read the last row but write nothing.
    let lanes = RowLanes(min(lid / PER_ROW, BR - 1u), lid % PER_ROW, lid < BR * PER_ROW);
    // Every query of the block sees every key of the tiles in [whole.x, whole.y).
    let whole = vec2<u32>(((first_key(end - 1u) + BC - 1u) / BC) * BC, ((pos0 + 1u) / BC) * BC);
    var largest = NO_SCORE;
    var pieces = fetch(split_first, kv_base, false, lid);
    for (var tile = split_first; tile < split_end; tile += BC) {
        stage(pieces, lid);
        workgroupBarrier();
        if (tile + BC < split_end) {
            pieces = fetch(tile + BC, kv_base, false, lid);
        }
        tile_scores(subgroup);
        workgroupBarrier();
        // The next tile's staging writes only kv_tile, which no one reads from here on.
        largest = max(largest, tile_max(tile, pos0, n_queries, is_whole(tile, whole), lanes));
    }
    largest = row_lanes_max(largest);
    var sum = 0.0;
    pieces = fetch(split_first, kv_base, false, lid);
    for (var tile = split_first; tile < split_end; tile += BC) {
        stage(pieces, lid);
        workgroupBarrier();
        pieces = fetch(tile, kv_base, true, lid);
        tile_scores(subgroup);
        workgroupBarrier();
        sum += weigh_row(tile, pos0, n_queries, is_whole(tile, whole), lanes, largest);
        stage(pieces, lid);
        workgroupBarrier();
        if (tile + BC < split_end) {
            pieces = fetch(tile + BC, kv_base, false, lid);
        }
        for (var key = 0u; key < BC; key += FRAGMENT) {
            let a = coopLoadT<coop_mat16x16<f16, A>>(&weights[(row_block * WEIGHT_STRIDE + key) / 4u], WEIGHT_STRIDE / 4u);
            let at = key * KV_STRIDE + slab / 4u;
            o0 = coopMultiplyAdd(a, coopLoadT<coop_mat16x16<f16, B>>(&kv_tile[at], KV_STRIDE), o0);
#ifdef SLAB_FRAGMENTS_2
            o1 = coopMultiplyAdd(a, coopLoadT<coop_mat16x16<f16, B>>(&kv_tile[at + 4u], KV_STRIDE), o1);
#endif
#ifdef SLAB_FRAGMENTS_4
            o2 = coopMultiplyAdd(a, coopLoadT<coop_mat16x16<f16, B>>(&kv_tile[at + 8u], KV_STRIDE), o2);
            o3 = coopMultiplyAdd(a, coopLoadT<coop_mat16x16<f16, B>>(&kv_tile[at + 12u], KV_STRIDE), o3);
#endif
        }
        // The next tile's keys, scores and weights overwrite these.
        workgroupBarrier();
    }
    sum = row_lanes_sum(sum);
    if (lanes.part == 0u && lanes.owns_row) {
        row_max[lanes.row] = largest;
        row_sum[lanes.row] = sum;
    }
    // (store_output's barrier makes them visible before they are read.)
    let rows = OutputRows(t0, n_queries, head, split, splits);
    store_output(o0, row_block, slab, rows, subgroup, lane);
#ifdef SLAB_FRAGMENTS_2
    store_output(o1, row_block, slab + 16u, rows, subgroup, lane);
#endif
#ifdef SLAB_FRAGMENTS_4
    store_output(o2, row_block, slab + 32u, rows, subgroup, lane);
    store_output(o3, row_block, slab + 48u, rows, subgroup, lane);
#endif
#ifdef KEY_SPLITS
    if (splits > 1u) {
        for (var row = lid; row < n_queries; row += WG) {
            split_stats[((t0 + row) * params.n_heads + head) * splits + split] = vec2<f32>(row_max[row], row_sum[row]);
        }
    }
#endif
}

// Whether the query of block row `row` (at pos0 + row) sees the key at `key_pos`.
fn sees(row: u32, key_pos: u32, pos0: u32, n_queries: u32) -> bool {
    let q_pos = pos0 + row;
    return row < n_queries && key_pos <= q_pos && key_pos >= first_key(q_pos);
}

// The largest of `value` over the PER_ROW lanes of the caller's row.
fn row_lanes_max(value: f32) -> f32 {
    var result = value;
    for (var offset = 1u; offset < PER_ROW; offset <<= 1u) {
        result = max(result, subgroupShuffleXor(result, offset));
    }
    return result;
}

fn row_lanes_sum(value: f32) -> f32 {
    var result = value;
    for (var offset = 1u; offset < PER_ROW; offset <<= 1u) {
        result += subgroupShuffleXor(result, offset);
    }
    return result;
}

// A thread's share of the scalar passes: row `row` of the block, its four-key pieces part,
// part + PER_ROW, … of each tile; only threads that own their row write.
struct RowLanes {
    row: u32,
    part: u32,
    owns_row: bool,
}

// Whether the tile at `tile` lies in the block's whole tiles [whole.x, whole.y): both passes must
// mask the same tiles.
fn is_whole(tile: u32, whole: vec2<u32>) -> bool {
    return tile >= whole.x && tile + BC <= whole.y;
}

// Which of the four keys from `key_pos` the query of block row `row` sees.
fn sees4(row: u32, key_pos: u32, pos0: u32, n_queries: u32) -> vec4<bool> {
    return vec4<bool>(
        sees(row, key_pos, pos0, n_queries),
        sees(row, key_pos + 1u, pos0, n_queries),
        sees(row, key_pos + 2u, pos0, n_queries),
        sees(row, key_pos + 3u, pos0, n_queries),
    );
}

// First pass: the largest of the tile's scores in the thread's pieces that its row's query sees
// (all of them in a `whole` tile).
fn tile_max(tile: u32, pos0: u32, n_queries: u32, whole: bool, lanes: RowLanes) -> f32 {
    var largest = vec4<f32>(NO_SCORE);
    for (var i = 0u; i < ROW_PIECES_PER_LANE; i++) {
        let piece = lanes.part + i * PER_ROW;
        var score = scores[lanes.row * (SCORE_STRIDE / 4u) + piece];
        if (!whole) {
            score = select(vec4<f32>(NO_SCORE), score, sees4(lanes.row, tile + piece * 4u, pos0, n_queries));
        }
        largest = max(largest, score);
    }
    return max(max(largest.x, largest.y), max(largest.z, largest.w));
}

// Second pass: the weights exp(score - largest) of the thread's pieces (0 for keys the query
// does not see), into `weights`; returns their sum.
fn weigh_row(tile: u32, pos0: u32, n_queries: u32, whole: bool, lanes: RowLanes, largest: f32) -> f32 {
    var sum = vec4<f32>(0.0);
    for (var i = 0u; i < ROW_PIECES_PER_LANE; i++) {
        let piece = lanes.part + i * PER_ROW;
        var w = exp(scores[lanes.row * (SCORE_STRIDE / 4u) + piece] - largest);
        if (!whole) {
            w = select(vec4<f32>(0.0), w, sees4(lanes.row, tile + piece * 4u, pos0, n_queries));
        }
        if (lanes.owns_row) {
            weights[lanes.row * (WEIGHT_STRIDE / 4u) + piece] = vec4<f16>(w);
        }
        sum += w;
    }
    return sum.x + sum.y + sum.z + sum.w;
}

// Where a workgroup's output goes: the rows of queries t0 .. t0 + n_queries - 1 of `head`, as
// split `split` of `splits`.
struct OutputRows {
    t0: u32,
    n_queries: u32,
    head: u32,
    split: u32,
    splits: u32,
}

// Divides fragment `o` (rows row .. row + 15 of the block, dimensions dim .. dim + 15) by its
// rows' weight sums into `out`, through the subgroup's slot of `scores`; a split of several
// leaves it undivided in its partials.
fn store_output(o: coop_mat16x16<f32, C>, row: u32, dim: u32, rows: OutputRows, subgroup: u32, lane: u32) {
    let slot = subgroup * FRAGMENT * FRAGMENT;
    coopStoreT(o, &scores[slot / 4u], FRAGMENT / 4u);
    workgroupBarrier();
    for (var i = lane; i < FRAGMENT * FRAGMENT; i += 32u) {
        let r = row + i / FRAGMENT;
        if (r < rows.n_queries) {
            let at = (rows.t0 + r) * params.n_heads + rows.head;
            let d = dim + i % FRAGMENT;
#ifdef KEY_SPLITS
            if (rows.splits > 1u) {
                split_acc[(at * rows.splits + rows.split) * HEAD_DIM + d] = scores[(slot + i) / 4u][i % 4u];
                continue;
            }
#endif
            out[at * HEAD_DIM + d] = scores[(slot + i) / 4u][i % 4u] / row_sum[r];
        }
    }
    workgroupBarrier();
}
