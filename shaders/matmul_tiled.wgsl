// Prefill matrix-matrix product Y[t, r] = Σ_k W[r,k]·X[t,k] for t < step.n_tokens, over rows
// of one chunk of a weight matrix kept in its GGUF block layout (quant_formats.wgsl; a TYPE_* define
// picks the type). A workgroup owns a tile of TILE_ROWS rows × TILE_TOKENS tokens and walks K
// in steps of TILE_K: it dequantizes the weight tile once into shared memory (so each weight is
// decoded once per TILE_TOKENS tokens) and stages the activations beside it. The product of the
// two tiles runs on plain f32 FMAs (WG = (TILE_ROWS / 4) · (TILE_TOKENS / 4)), with
// BROADCAST_LANES on f32 FMAs that share the activations across a subgroup (CPU adapters;
// WG = (TILE_ROWS / 4) · (TILE_TOKENS / 16)), or with COOPERATIVE_MATRIX on the tensor cores
// (subgroups of 32 threads).
// Split K: with params.splits > 1, the workgroups of split s walk only K values
// s·split_len .. (s + 1)·split_len and write their partial sums to slice s of y (a scratch
// buffer, slices split_stride apart), which elementwise.wgsl's sum_slices adds up. Matrices
// with few rows then still spread over every compute unit.
#include "step.wgsl"
#include "half_pack.wgsl"

struct Params {
    // Rows in this chunk.
    rows: u32,
    row_len: u32,
    row_bytes: u32,
    // Values per token in Y: the rows of the whole matrix.
    out_stride: u32,
    // Column of Y that receives the chunk's first row.
    first_row: u32,
    row_tiles: u32,
    // Tokens the activation buffers hold: a larger step.n_tokens is clamped to it.
    max_tokens: u32,
    // Chunk row that is this product's first row: one part of a stacked matrix.
    weight_row0: u32,
    splits: u32,
    // K values per split (a multiple of TILE_K), and elements between the splits' slices.
    split_len: u32,
    split_stride: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> weights: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> params: Params;

#include "quant_formats.wgsl"
#include "split_tile.wgsl"

const K_QUADS = TILE_K / 4u;

// A thread's place in its workgroup (subgroup fields unused without COOPERATIVE_MATRIX).
struct Invocation {
    lid: u32,
    subgroup: u32,
    lane: u32,
}

// Writes one output value, dropping those outside the chunk's rows or the step's tokens.
fn store_one(split: u32, token: u32, n_tokens: u32, row: u32, value: f32) {
    if (token < n_tokens && row < params.rows) {
        y[split * params.split_stride + token * params.out_stride + params.first_row + row] = value;
    }
}

// The weight value W[row0 + r, k .. k + 3] of this chunk, or zeros past its rows or K range.
fn weight_quad(row: u32, k: u32, k_end: u32) -> vec4<f32> {
    if (row < params.rows && k < k_end) {
        return dequant4((params.weight_row0 + row) * params.row_bytes + (k / BLOCK_LEN) * BLOCK_BYTES, k % BLOCK_LEN);
    }
    return vec4<f32>(0.0);
}

// X[token, k .. k + 3], or zeros past the step's tokens or the K range.
fn input_quad(token: u32, n_tokens: u32, k: u32, k_end: u32) -> vec4<f32> {
    if (token < n_tokens && k < k_end) {
        return x[(token * params.row_len + k) >> 2u];
    }
    return vec4<f32>(0.0);
}

#ifdef COOPERATIVE_MATRIX
// Tensor-core variant: subgroups of 32 threads, each multiplying a 32-token × 32-row block of
// the tile as 2 × 2 cooperative 16 × 16 × 16 products (f16 in, f32 accumulate); needs
// WG = 32 · (TILE_ROWS / 32) · (TILE_TOKENS / 32). Tiles hold f16 with K fastest; rows are
// padded by 8 values so they start 16 bytes apart without all falling on the same banks.
const FRAGMENT = 16u;
const SUBGROUP_BLOCK = 32u;
const ROW_BLOCKS = TILE_ROWS / SUBGROUP_BLOCK;
const SUBGROUPS = WG / 32u;
const TILE_STRIDE = TILE_K + 8u;
// Both operands in one array (workgroup pointers cannot be passed to functions, so one staging
// function serves both through offsets). At W_TILE, tiles[W_TILE + r · TILE_STRIDE + k] =
// W[row0 + r, k0 + k]: the B operand (K × rows) column-major. At X_TILE, likewise
// X[token0 + t, k0 + k]: the A operand (tokens × K) row-major.
const W_TILE = 0u;
const X_TILE = TILE_ROWS * TILE_STRIDE;
var<workgroup> tiles: array<f16, (TILE_ROWS + TILE_TOKENS) * TILE_STRIDE>;
// One finished 16 × 16 fragment per subgroup (tokens × rows), so the copy to y can drop what
// lies outside the chunk or the step.
var<workgroup> fragments: array<f32, SUBGROUPS * FRAGMENT * FRAGMENT>;

fn stage_quad(at: u32, v: vec4<f32>) {
    let h = vec4<f16>(in_half_range(v));
    tiles[at] = h.x;
    tiles[at + 1u] = h.y;
    tiles[at + 2u] = h.z;
    tiles[at + 3u] = h.w;
}

// Writes fragment c (tokens token .. token + 15, rows row .. row + 15) through the subgroup's
// slot of `fragments`. Every thread of the workgroup calls it (barriers).
fn store_fragment(c: coop_mat16x16<f32, C>, split: u32, token: u32, n_tokens: u32, row: u32, invocation: Invocation) {
    let slot = invocation.subgroup * FRAGMENT * FRAGMENT;
    coopStoreT(c, &fragments[slot], FRAGMENT);
    workgroupBarrier();
    for (var i = invocation.lane; i < FRAGMENT * FRAGMENT; i += 32u) {
        store_one(split, token + i / FRAGMENT, n_tokens, row + i % FRAGMENT, fragments[slot + i]);
    }
    workgroupBarrier();
}

fn product_tile(split: u32, row0: u32, token0: u32, n_tokens: u32, k_first: u32, k_end: u32, invocation: Invocation) {
    let lid = invocation.lid;
    let token_base = (invocation.subgroup / ROW_BLOCKS) * SUBGROUP_BLOCK;
    let row_base = (invocation.subgroup % ROW_BLOCKS) * SUBGROUP_BLOCK;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    for (var k0 = k_first; k0 < k_end; k0 += TILE_K) {
        for (var i = lid; i < TILE_ROWS * K_QUADS; i += WG) {
            let r = i / K_QUADS;
            let k = (i % K_QUADS) * 4u;
            stage_quad(W_TILE + r * TILE_STRIDE + k, weight_quad(row0 + r, k0 + k, k_end));
        }
        for (var i = lid; i < TILE_TOKENS * K_QUADS; i += WG) {
            let t = i / K_QUADS;
            let k = (i % K_QUADS) * 4u;
            stage_quad(X_TILE + t * TILE_STRIDE + k, input_quad(token0 + t, n_tokens, k0 + k, k_end));
        }
        workgroupBarrier();
        for (var k = 0u; k < TILE_K; k += FRAGMENT) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[X_TILE + token_base * TILE_STRIDE + k], TILE_STRIDE);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[X_TILE + (token_base + FRAGMENT) * TILE_STRIDE + k], TILE_STRIDE);
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[W_TILE + row_base * TILE_STRIDE + k], TILE_STRIDE);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[W_TILE + (row_base + FRAGMENT) * TILE_STRIDE + k], TILE_STRIDE);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
        }
        workgroupBarrier();
    }
    let token = token0 + token_base;
    let row = row0 + row_base;
    store_fragment(c00, split, token, n_tokens, row, invocation);
    store_fragment(c01, split, token, n_tokens, row + FRAGMENT, invocation);
    store_fragment(c10, split, token + FRAGMENT, n_tokens, row, invocation);
    store_fragment(c11, split, token + FRAGMENT, n_tokens, row + FRAGMENT, invocation);
}
#else
const ROW_QUADS = TILE_ROWS / 4u;
const TOKEN_QUADS = TILE_TOKENS / 4u;

// w_tile[k · ROW_QUADS + r / 4][r % 4] = W[row0 + r, k0 + k], and likewise for tokens.
var<workgroup> w_tile: array<vec4<f32>, TILE_K * ROW_QUADS>;
var<workgroup> x_tile: array<vec4<f32>, TILE_K * TOKEN_QUADS>;

// Writes the outputs of one token for rows row .. row + 3 (component c is row + c).
fn store(split: u32, token: u32, n_tokens: u32, row: u32, values: vec4<f32>) {
    store_one(split, token, n_tokens, row, values.x);
    store_one(split, token, n_tokens, row + 1u, values.y);
    store_one(split, token, n_tokens, row + 2u, values.z);
    store_one(split, token, n_tokens, row + 3u, values.w);
}

// Decodes the weight tile and stages the activations of the K step at k0 (before a barrier).
fn stage_tiles(row0: u32, token0: u32, n_tokens: u32, k0: u32, k_end: u32, lid: u32) {
    // Neighbouring threads decode neighbouring values of one row: coalesced weight reads.
    for (var i = lid; i < TILE_ROWS * K_QUADS; i += WG) {
        let r = i / K_QUADS;
        let k = (i % K_QUADS) * 4u;
        let v = weight_quad(row0 + r, k0 + k, k_end);
        let slot = k * ROW_QUADS + r / 4u;
        let c = r % 4u;
        w_tile[slot][c] = v.x;
        w_tile[slot + ROW_QUADS][c] = v.y;
        w_tile[slot + 2u * ROW_QUADS][c] = v.z;
        w_tile[slot + 3u * ROW_QUADS][c] = v.w;
    }
    for (var i = lid; i < TILE_TOKENS * K_QUADS; i += WG) {
        let t = i / K_QUADS;
        let k = (i % K_QUADS) * 4u;
        let v = input_quad(token0 + t, n_tokens, k0 + k, k_end);
        let slot = k * TOKEN_QUADS + t / 4u;
        let c = t % 4u;
        x_tile[slot][c] = v.x;
        x_tile[slot + TOKEN_QUADS][c] = v.y;
        x_tile[slot + 2u * TOKEN_QUADS][c] = v.z;
        x_tile[slot + 3u * TOKEN_QUADS][c] = v.w;
    }
}

#ifdef BROADCAST_LANES
// CPU adapters (llvmpipe) run a subgroup as one SIMD vector and load from memory one lane at a
// time, so loads, not FMAs, set the speed. Every thread accumulates 4 rows × 16 tokens, and the
// BROADCAST_LANES (8) lanes of a subgroup, which own 32 neighbouring rows and the same tokens,
// share the activations: lane l loads them for K step k + l, and subgroupBroadcast hands each
// lane's to all. A K step then costs a lane one vec4 load of weights and half of one of
// activations for 64 FMAs, where the 4 × 4 blocks take two for 16.
// acc_i: token 16·token_group + i, rows 4·row_quad .. + 3 (zero at the start, as private
// variables are; named, not an array, so they stay in registers).
var<private> acc_0: vec4<f32>;
var<private> acc_1: vec4<f32>;
var<private> acc_2: vec4<f32>;
var<private> acc_3: vec4<f32>;
var<private> acc_4: vec4<f32>;
var<private> acc_5: vec4<f32>;
var<private> acc_6: vec4<f32>;
var<private> acc_7: vec4<f32>;
var<private> acc_8: vec4<f32>;
var<private> acc_9: vec4<f32>;
var<private> acc_10: vec4<f32>;
var<private> acc_11: vec4<f32>;
var<private> acc_12: vec4<f32>;
var<private> acc_13: vec4<f32>;
var<private> acc_14: vec4<f32>;
var<private> acc_15: vec4<f32>;

// Adds rows · t_q (token quad q's values at one K step) to the accumulators.
fn accumulate(rows: vec4<f32>, t0: vec4<f32>, t1: vec4<f32>, t2: vec4<f32>, t3: vec4<f32>) {
    acc_0 += rows * t0.x;
    acc_1 += rows * t0.y;
    acc_2 += rows * t0.z;
    acc_3 += rows * t0.w;
    acc_4 += rows * t1.x;
    acc_5 += rows * t1.y;
    acc_6 += rows * t1.z;
    acc_7 += rows * t1.w;
    acc_8 += rows * t2.x;
    acc_9 += rows * t2.y;
    acc_10 += rows * t2.z;
    acc_11 += rows * t2.w;
    acc_12 += rows * t3.x;
    acc_13 += rows * t3.y;
    acc_14 += rows * t3.z;
    acc_15 += rows * t3.w;
}

fn product_tile(split: u32, row0: u32, token0: u32, n_tokens: u32, k_first: u32, k_end: u32, invocation: Invocation) {
    let lid = invocation.lid;
    let row_quad = lid % ROW_QUADS;
    let token_group = lid / ROW_QUADS;
    let has_tokens = token0 + token_group * 16u < n_tokens;
    for (var k0 = k_first; k0 < k_end; k0 += TILE_K) {
        stage_tiles(row0, token0, n_tokens, k0, k_end, lid);
        workgroupBarrier();
        if (has_tokens) {
            for (var k = 0u; k < TILE_K; k += BROADCAST_LANES) {
                let at = (k + invocation.lane) * TOKEN_QUADS + token_group * 4u;
                let x0 = x_tile[at];
                let x1 = x_tile[at + 1u];
                let x2 = x_tile[at + 2u];
                let x3 = x_tile[at + 3u];
                accumulate(w_tile[(k + 0u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 0u), subgroupBroadcast(x1, 0u), subgroupBroadcast(x2, 0u), subgroupBroadcast(x3, 0u));
                accumulate(w_tile[(k + 1u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 1u), subgroupBroadcast(x1, 1u), subgroupBroadcast(x2, 1u), subgroupBroadcast(x3, 1u));
                accumulate(w_tile[(k + 2u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 2u), subgroupBroadcast(x1, 2u), subgroupBroadcast(x2, 2u), subgroupBroadcast(x3, 2u));
                accumulate(w_tile[(k + 3u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 3u), subgroupBroadcast(x1, 3u), subgroupBroadcast(x2, 3u), subgroupBroadcast(x3, 3u));
                accumulate(w_tile[(k + 4u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 4u), subgroupBroadcast(x1, 4u), subgroupBroadcast(x2, 4u), subgroupBroadcast(x3, 4u));
                accumulate(w_tile[(k + 5u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 5u), subgroupBroadcast(x1, 5u), subgroupBroadcast(x2, 5u), subgroupBroadcast(x3, 5u));
                accumulate(w_tile[(k + 6u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 6u), subgroupBroadcast(x1, 6u), subgroupBroadcast(x2, 6u), subgroupBroadcast(x3, 6u));
                accumulate(w_tile[(k + 7u) * ROW_QUADS + row_quad], subgroupBroadcast(x0, 7u), subgroupBroadcast(x1, 7u), subgroupBroadcast(x2, 7u), subgroupBroadcast(x3, 7u));
            }
        }
        workgroupBarrier();
    }
    let token = token0 + token_group * 16u;
    let row = row0 + row_quad * 4u;
    store(split, token + 0u, n_tokens, row, acc_0);
    store(split, token + 1u, n_tokens, row, acc_1);
    store(split, token + 2u, n_tokens, row, acc_2);
    store(split, token + 3u, n_tokens, row, acc_3);
    store(split, token + 4u, n_tokens, row, acc_4);
    store(split, token + 5u, n_tokens, row, acc_5);
    store(split, token + 6u, n_tokens, row, acc_6);
    store(split, token + 7u, n_tokens, row, acc_7);
    store(split, token + 8u, n_tokens, row, acc_8);
    store(split, token + 9u, n_tokens, row, acc_9);
    store(split, token + 10u, n_tokens, row, acc_10);
    store(split, token + 11u, n_tokens, row, acc_11);
    store(split, token + 12u, n_tokens, row, acc_12);
    store(split, token + 13u, n_tokens, row, acc_13);
    store(split, token + 14u, n_tokens, row, acc_14);
    store(split, token + 15u, n_tokens, row, acc_15);
}
#else
// Every thread accumulates a 4-row × 4-token block of outputs from vec4 reads of both tiles.
fn product_tile(split: u32, row0: u32, token0: u32, n_tokens: u32, k_first: u32, k_end: u32, invocation: Invocation) {
    let lid = invocation.lid;
    let row_quad = lid % ROW_QUADS;
    let token_quad = lid / ROW_QUADS;
    // Threads whose four tokens all lie past the step's skip the multiply: a short prompt fills
    // few of a tile's tokens, and a CPU adapter's SIMD lanes (TILE_ROWS / 4 threads a token
    // quad) then skip the work a GPU's would have done on zeros.
    let has_tokens = token0 + token_quad * 4u < n_tokens;
    // acc_j[c]: token token0 + 4·token_quad + j, row row0 + 4·row_quad + c. Named vectors,
    // not an array, so they stay in registers.
    var acc_0 = vec4<f32>(0.0);
    var acc_1 = vec4<f32>(0.0);
    var acc_2 = vec4<f32>(0.0);
    var acc_3 = vec4<f32>(0.0);

    for (var k0 = k_first; k0 < k_end; k0 += TILE_K) {
        stage_tiles(row0, token0, n_tokens, k0, k_end, lid);
        workgroupBarrier();
        if (has_tokens) {
            for (var k = 0u; k < TILE_K; k++) {
                let w = w_tile[k * ROW_QUADS + row_quad];
                let t = x_tile[k * TOKEN_QUADS + token_quad];
                acc_0 += w * t.x;
                acc_1 += w * t.y;
                acc_2 += w * t.z;
                acc_3 += w * t.w;
            }
        }
        workgroupBarrier();
    }

    let token = token0 + token_quad * 4u;
    let row = row0 + row_quad * 4u;
    store(split, token, n_tokens, row, acc_0);
    store(split, token + 1u, n_tokens, row, acc_1);
    store(split, token + 2u, n_tokens, row, acc_2);
    store(split, token + 3u, n_tokens, row, acc_3);
}
#endif
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#ifdef COOPERATIVE_MATRIX
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane: u32,
#endif
#ifdef BROADCAST_LANES
    @builtin(subgroup_invocation_id) lane: u32,
#endif
) {
#ifdef COOPERATIVE_MATRIX
    let invocation = Invocation(lid, subgroup, lane);
#else
#ifdef BROADCAST_LANES
    let invocation = Invocation(lid, 0u, lane);
#else
    let invocation = Invocation(lid, 0u, 0u);
#endif
#endif
    load_value_table(lid);
    let t = split_tile(wid, nwg);
    if (split_tile_is_empty(t)) {
        return;
    }
    product_tile(t.split, t.row0, t.token0, t.n_tokens, t.k_first, t.k_end, invocation);
}
