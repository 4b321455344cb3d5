// Prefill matrix-matrix product Y[t, r] = Σ_k W[r,k]·X[t,k] for t < step.n_tokens, over rows
// of one chunk of a weight matrix kept in its GGUF block layout (quant_formats.wgsl; a TYPE_* define
// picks the type). A workgroup owns a tile of TILE_ROWS rows × TILE_TOKENS tokens and walks K
// in steps of TILE_K: it dequantizes the weight tile once into shared memory (so each weight is
// decoded once per TILE_TOKENS tokens), stages the activations beside it, and every thread
// accumulates a 4-row × 4-token block of outputs from vec4 reads of both tiles.
// Needs WG = (TILE_ROWS / 4) · (TILE_TOKENS / 4).
// Split K: with params.splits > 1, the workgroups of split s walk only K values
// s·split_len .. (s + 1)·split_len and write their partial sums to slice s of y (a scratch
// buffer, slices split_stride apart), which elementwise.wgsl's sum_slices adds up. Matrices
// with few rows then still spread over every compute unit.
#include "step.wgsl"

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

const ROW_QUADS = TILE_ROWS / 4u;
const TOKEN_QUADS = TILE_TOKENS / 4u;
const K_QUADS = TILE_K / 4u;

// w_tile[k · ROW_QUADS + r / 4][r % 4] = W[row0 + r, k0 + k], and likewise for tokens.
var<workgroup> w_tile: array<vec4<f32>, TILE_K * ROW_QUADS>;
var<workgroup> x_tile: array<vec4<f32>, TILE_K * TOKEN_QUADS>;

// Writes the outputs of one token for rows row .. row + 3 (component c is row + c).
fn store(split: u32, token: u32, n_tokens: u32, row: u32, values: vec4<f32>) {
    if (token >= n_tokens) {
        return;
    }
    let at = split * params.split_stride + token * params.out_stride + params.first_row + row;
    if (row < params.rows) {
        y[at] = values.x;
    }
    if (row + 1u < params.rows) {
        y[at + 1u] = values.y;
    }
    if (row + 2u < params.rows) {
        y[at + 2u] = values.z;
    }
    if (row + 3u < params.rows) {
        y[at + 3u] = values.w;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n_tokens = min(step.n_tokens, params.max_tokens);
    let tiles_per_split = params.row_tiles * ((n_tokens + TILE_TOKENS - 1u) / TILE_TOKENS);
    let index = wid.x + wid.y * nwg.x;
    let split = index / tiles_per_split;
    let tile = index % tiles_per_split;
    let row0 = (tile % params.row_tiles) * TILE_ROWS;
    let token0 = (tile / params.row_tiles) * TILE_TOKENS;
    if (split >= params.splits || token0 >= n_tokens) {
        return;
    }
    let row_len = params.row_len;
    let k_first = split * params.split_len;
    let k_end = min(row_len, k_first + params.split_len);
    let row_quad = lid % ROW_QUADS;
    let token_quad = lid / ROW_QUADS;
    // acc_j[c]: token token0 + 4·token_quad + j, row row0 + 4·row_quad + c. Named vectors,
    // not an array, so they stay in registers.
    var acc_0 = vec4<f32>(0.0);
    var acc_1 = vec4<f32>(0.0);
    var acc_2 = vec4<f32>(0.0);
    var acc_3 = vec4<f32>(0.0);

    for (var k0 = k_first; k0 < k_end; k0 += TILE_K) {
        // Neighbouring threads decode neighbouring values of one row: coalesced weight reads.
        for (var i = lid; i < TILE_ROWS * K_QUADS; i += WG) {
            let r = i / K_QUADS;
            let k = k0 + (i % K_QUADS) * 4u;
            let row = row0 + r;
            var v = vec4<f32>(0.0);
            if (row < params.rows && k < k_end) {
                v = dequant4((params.weight_row0 + row) * params.row_bytes + (k / BLOCK_LEN) * BLOCK_BYTES, k % BLOCK_LEN);
            }
            let slot = (k - k0) * ROW_QUADS + r / 4u;
            let c = r % 4u;
            w_tile[slot][c] = v.x;
            w_tile[slot + ROW_QUADS][c] = v.y;
            w_tile[slot + 2u * ROW_QUADS][c] = v.z;
            w_tile[slot + 3u * ROW_QUADS][c] = v.w;
        }
        for (var i = lid; i < TILE_TOKENS * K_QUADS; i += WG) {
            let t = i / K_QUADS;
            let k = k0 + (i % K_QUADS) * 4u;
            let token = token0 + t;
            var v = vec4<f32>(0.0);
            if (token < n_tokens && k < k_end) {
                v = x[(token * row_len + k) >> 2u];
            }
            let slot = (k - k0) * TOKEN_QUADS + t / 4u;
            let c = t % 4u;
            x_tile[slot][c] = v.x;
            x_tile[slot + TOKEN_QUADS][c] = v.y;
            x_tile[slot + 2u * TOKEN_QUADS][c] = v.z;
            x_tile[slot + 3u * TOKEN_QUADS][c] = v.w;
        }
        workgroupBarrier();
        for (var k = 0u; k < TILE_K; k++) {
            let w = w_tile[k * ROW_QUADS + row_quad];
            let t = x_tile[k * TOKEN_QUADS + token_quad];
            acc_0 += w * t.x;
            acc_1 += w * t.y;
            acc_2 += w * t.z;
            acc_3 += w * t.w;
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
