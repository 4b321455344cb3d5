// Prefill matrix-matrix product on the tensor cores from f16 operands: Y[t, first_row + r] =
// Σ_k W[r, k]·X[t, k] for t < step.n_tokens and r < rows, W and X row-major f16 made by
// dequantize_half.wgsl and convert_half.wgsl. Unlike matmul_tiled.wgsl, which decodes GGUF
// blocks while it stages every tile, staging here is a copy: 16-byte loads, each stored as two
// vec4<f16> (a pointer to a vector element serves a cooperative load, its stride counted in
// vectors). The loads of the next K step are issued before the products of the current one,
// so they are in flight while the tensor cores work. Both buffers hold whole tiles (rows
// padded to TILE_ROWS, tokens to TILE_TOKENS); what the padding holds reaches only outputs
// that are dropped.
//
// A workgroup owns TILE_TOKENS tokens × TILE_ROWS rows; each subgroup of 32 threads a block of
// 32 tokens × 64 rows as 2 × 4 cooperative 16 × 16 × 16 products (f16 in, f32 accumulate),
// named values rather than arrays (arrays of cooperative matrices were half as fast on NVIDIA).
//
// GATED: the gated feed-forward input act(gate·x)·(up·x) in one product. W's rows are the gate
// and up rows interleaved 16 at a time (dequantize_half.wgsl's `pair_offset`): W rows
// 32g .. 32g + 15 are gate rows 16g .., rows 32g + 16 .. their up rows, so a subgroup's
// fragments 0 and 1 (2 and 3) hold a gate fragment and its up fragment; Y row r of the product
// (params.rows / 2 of them) takes act(gate row r)·(up row r). K is not split.
//
// STACKED: three products of one input in one (a layer's q, k and v): W's rows are the three
// matrices' rows one after the other, parts starting at rows part1_row and part2_row (whole
// tiles apart, so a workgroup's rows lie in one part), and part p's rows go to output p
// (y, y1, y2), as wide as the part. K is not split: the stacked rows fill the GPU where each
// matrix alone would have split K and summed the slices.
#include "step.wgsl"
#ifdef GATED
#include "activation.wgsl"
#endif

struct Params {
    // Rows of this pass: W's rows.
    rows: u32,
    row_len: u32,
    // Values per token in Y: the rows of the whole product.
    out_stride: u32,
    // Column of Y that receives W's first row.
    first_row: u32,
    row_tiles: u32,
    // Tokens Y holds: a larger step.n_tokens is clamped to it.
    max_tokens: u32,
    // Split K as in matmul_tiled.wgsl: with splits > 1, split s walks only K values
    // s·split_len .. (s + 1)·split_len (a multiple of TILE_K) and writes slice s of y,
    // split_stride values apart, which elementwise.wgsl's sum_slices adds up.
    splits: u32,
    split_len: u32,
    split_stride: u32,
    // STACKED: W's rows where parts 1 and 2 start.
    part1_row: u32,
    part2_row: u32,
    _pad0: u32,
}

// Eight f16 values to an element.
@group(0) @binding(0) var<storage, read> weights: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> params: Params;
#ifdef STACKED
@group(0) @binding(5) var<storage, read_write> y1: array<f32>;
@group(0) @binding(6) var<storage, read_write> y2: array<f32>;
#endif
#include "split_tile.wgsl"

const FRAGMENT = 16u;
const BLOCK_TOKENS = 32u;
const BLOCK_ROWS = 64u;
const ROW_BLOCKS = TILE_ROWS / BLOCK_ROWS;
const SUBGROUPS = WG / 32u;
// Rows of a tile in vec4<f16>: TILE_K values and 8 of padding, so rows start 16 bytes apart
// without all falling on the same banks.
const TILE_STRIDE = (TILE_K + 8u) / 4u;
// 16-byte pieces of a tile row, and of whole tiles.
const ROW_PIECES = TILE_K / 8u;
const W_PIECES = TILE_ROWS * ROW_PIECES;
const X_PIECES = TILE_TOKENS * ROW_PIECES;
// Pieces each thread copies of each tile per K step (both hold whole multiples of WG pieces).
const COPIES = W_PIECES / WG;

// At W_TILE, tiles[W_TILE + r · TILE_STRIDE + k / 4] = W[row0 + r, k0 + k .. k0 + k + 3]: the B
// operand (K × rows) column-major. At X_TILE, likewise X[token0 + t, ...]: the A operand
// (tokens × K) row-major.
const W_TILE = 0u;
const X_TILE = TILE_ROWS * TILE_STRIDE;
var<workgroup> tiles: array<vec4<f16>, (TILE_ROWS + TILE_TOKENS) * TILE_STRIDE>;
// One 16 × 16 fragment per subgroup (tokens × rows), for the tiles at the edges of the
// product, where the copy to y must drop what lies outside it.
var<workgroup> fragments: array<f32, SUBGROUPS * FRAGMENT * FRAGMENT>;

// The pieces a thread copies: piece lid + c·WG of each tile in element c.
struct Pieces {
    w: array<vec4<u32>, COPIES>,
    x: array<vec4<u32>, COPIES>,
}

// Piece `piece` of a tile whose rows start at element `first` of their buffer, as
// (buffer element, tile element).
fn piece_at(piece: u32, first: u32, k0: u32) -> vec2<u32> {
    let row = piece / ROW_PIECES;
    let part = piece % ROW_PIECES;
    return vec2<u32>(first + (row * params.row_len + k0) / 8u + part, row * TILE_STRIDE + part * 2u);
}

fn fetch(lid: u32, w_first: u32, x_first: u32, k0: u32) -> Pieces {
    var p: Pieces;
    for (var c = 0u; c < COPIES; c++) {
        p.w[c] = weights[piece_at(lid + c * WG, w_first, k0).x];
        p.x[c] = x[piece_at(lid + c * WG, x_first, k0).x];
    }
    return p;
}

// (Through f32 and back, exactly: naga's bitcast keeps the component count.)
fn stage(at: u32, piece: vec4<u32>) {
    tiles[at] = vec4<f16>(vec4<f32>(unpack2x16float(piece.x), unpack2x16float(piece.y)));
    tiles[at + 1u] = vec4<f16>(vec4<f32>(unpack2x16float(piece.z), unpack2x16float(piece.w)));
}

fn stage_all(lid: u32, p: Pieces) {
    for (var c = 0u; c < COPIES; c++) {
        let at = piece_at(lid + c * WG, 0u, 0u).y;
        stage(W_TILE + at, p.w[c]);
        stage(X_TILE + at, p.x[c]);
    }
}

// Where the rows of a tile go: output `part` (STACKED; else y), whose element for token t and
// tile row r is at base + t · stride + r.
struct Target {
    part: u32,
    base: u32,
    stride: u32,
}

fn target_of(split: u32, row0: u32) -> Target {
#ifdef STACKED
    if (row0 >= params.part2_row) {
        return Target(2u, row0 - params.part2_row, params.rows - params.part2_row);
    }
    if (row0 >= params.part1_row) {
        return Target(1u, row0 - params.part1_row, params.part2_row - params.part1_row);
    }
    return Target(0u, row0, params.part1_row);
#else
    return Target(0u, split * params.split_stride + params.first_row + row0, params.out_stride);
#endif
}

fn store_value(part: u32, at: u32, value: f32) {
#ifdef STACKED
    if (part == 1u) {
        y1[at] = value;
        return;
    }
    if (part == 2u) {
        y2[at] = value;
        return;
    }
#endif
    y[at] = value;
}

// Writes fragment c (tokens token .. token + 15, tile rows row .. row + 15) to `to`. `inside`
// (the same for the whole workgroup) says every value lies inside the product: stored
// straight to the output; else through the subgroup's slot of `fragments`, with barriers for
// the whole workgroup.
fn store_fragment(c: coop_mat16x16<f32, C>, inside: bool, to: Target, token: u32, n_tokens: u32, row: u32, row_end: u32, subgroup: u32, lane: u32) {
    if (inside) {
        let at = to.base + token * to.stride + row;
        let stride = to.stride;
#ifdef STACKED
        if (to.part == 1u) {
            coopStoreT(c, &y1[at], stride);
            return;
        }
        if (to.part == 2u) {
            coopStoreT(c, &y2[at], stride);
            return;
        }
#endif
        coopStoreT(c, &y[at], stride);
        return;
    }
    let slot = subgroup * FRAGMENT * FRAGMENT;
    coopStoreT(c, &fragments[slot], FRAGMENT);
    workgroupBarrier();
    for (var i = lane; i < FRAGMENT * FRAGMENT; i += 32u) {
        let t = token + i / FRAGMENT;
        let r = row + i % FRAGMENT;
        if (t < n_tokens && r < row_end) {
            store_value(to.part, to.base + t * to.stride + r, fragments[slot + i]);
        }
    }
    workgroupBarrier();
}

#ifdef GATED
// Writes act(g)·u for fragments g (gate) and u (up) of tokens token .. token + 15, into Y rows
// row .. row + 15 (rows of the gated output), through the subgroup's slot of `fragments`,
// with barriers for the whole workgroup.
fn store_gated(g: coop_mat16x16<f32, C>, u: coop_mat16x16<f32, C>, token: u32, n_tokens: u32, row: u32, subgroup: u32, lane: u32) {
    let slot = subgroup * FRAGMENT * FRAGMENT;
    coopStoreT(g, &fragments[slot], FRAGMENT);
    workgroupBarrier();
    // Each lane's 8 gate values, lane + 32j of the fragment, as two vectors.
    let gates0 = vec4<f32>(fragments[slot + lane], fragments[slot + lane + 32u], fragments[slot + lane + 64u], fragments[slot + lane + 96u]);
    let gates1 = vec4<f32>(fragments[slot + lane + 128u], fragments[slot + lane + 160u], fragments[slot + lane + 192u], fragments[slot + lane + 224u]);
    workgroupBarrier();
    coopStoreT(u, &fragments[slot], FRAGMENT);
    workgroupBarrier();
    for (var j = 0u; j < 8u; j++) {
        let i = lane + 32u * j;
        let t = token + i / FRAGMENT;
        let r = row + i % FRAGMENT;
        let gate = select(gates0[j & 3u], gates1[j & 3u], j >= 4u);
        if (t < n_tokens && r < params.rows / 2u) {
            y[t * params.out_stride + params.first_row + r] = activation(gate) * fragments[slot + i];
        }
    }
    workgroupBarrier();
}
#endif

fn product_tile(split: u32, row0: u32, token0: u32, n_tokens: u32, k_first: u32, k_end: u32, lid: u32, subgroup: u32, lane: u32) {
    let k_len = params.row_len;
    let w_first = row0 * k_len / 8u;
    let x_first = token0 * k_len / 8u;
    let token_base = (subgroup / ROW_BLOCKS) * BLOCK_TOKENS;
    let row_base = (subgroup % ROW_BLOCKS) * BLOCK_ROWS;
    let a_at = X_TILE + token_base * TILE_STRIDE;
    let b_at = W_TILE + row_base * TILE_STRIDE;
    let next = FRAGMENT * TILE_STRIDE;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var pieces = fetch(lid, w_first, x_first, k_first);
    for (var k0 = k_first; k0 < k_end; k0 += TILE_K) {
        stage_all(lid, pieces);
        workgroupBarrier();
        if (k0 + TILE_K < k_end) {
            pieces = fetch(lid, w_first, x_first, k0 + TILE_K);
        }
        for (var k = 0u; k < TILE_K / 4u; k += FRAGMENT / 4u) {
            let a0_at = a_at + k;
            let a1_at = a0_at + next;
            let b0_at = b_at + k;
            let b1_at = b0_at + next;
            let b2_at = b1_at + next;
            let b3_at = b2_at + next;
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[a0_at], TILE_STRIDE);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[a1_at], TILE_STRIDE);
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[b0_at], TILE_STRIDE);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[b1_at], TILE_STRIDE);
            let b2 = coopLoad<coop_mat16x16<f16, B>>(&tiles[b2_at], TILE_STRIDE);
            let b3 = coopLoad<coop_mat16x16<f16, B>>(&tiles[b3_at], TILE_STRIDE);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
        workgroupBarrier();
    }
    let token = token0 + token_base;
    let token1 = token + FRAGMENT;
#ifdef GATED
    let gated_row = (row0 + row_base) / 2u;
    store_gated(c00, c01, token, n_tokens, gated_row, subgroup, lane);
    store_gated(c02, c03, token, n_tokens, gated_row + FRAGMENT, subgroup, lane);
    store_gated(c10, c11, token1, n_tokens, gated_row, subgroup, lane);
    store_gated(c12, c13, token1, n_tokens, gated_row + FRAGMENT, subgroup, lane);
#else
    let inside = token0 + TILE_TOKENS <= n_tokens && row0 + TILE_ROWS <= params.rows;
    // Rows relative to the tile, so a part's rows count from its first.
    let to = target_of(split, row0);
    let r = row_base;
    let end = params.rows - row0;
    store_fragment(c00, inside, to, token, n_tokens, r, end, subgroup, lane);
    store_fragment(c01, inside, to, token, n_tokens, r + FRAGMENT, end, subgroup, lane);
    store_fragment(c02, inside, to, token, n_tokens, r + 2u * FRAGMENT, end, subgroup, lane);
    store_fragment(c03, inside, to, token, n_tokens, r + 3u * FRAGMENT, end, subgroup, lane);
    store_fragment(c10, inside, to, token1, n_tokens, r, end, subgroup, lane);
    store_fragment(c11, inside, to, token1, n_tokens, r + FRAGMENT, end, subgroup, lane);
    store_fragment(c12, inside, to, token1, n_tokens, r + 2u * FRAGMENT, end, subgroup, lane);
    store_fragment(c13, inside, to, token1, n_tokens, r + 3u * FRAGMENT, end, subgroup, lane);
#endif
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let t = split_tile(wid, nwg);
    if (split_tile_is_empty(t)) {
        return;
    }
    product_tile(t.split, t.row0, t.token0, t.n_tokens, t.k_first, t.k_end, lid, subgroup, lane);
}
