// Decode matrix-vector product y[r] = Σ_k W[r,k]·x[k] over one chunk of a weight matrix kept
// in its GGUF block layout (see quant_formats.wgsl; a TYPE_* define picks the type).
// A workgroup computes ROWS (1, 2 or 4) rows: its WG threads (a power of two) stride over the
// parts of the rows' blocks, each loading its slice of x once into registers and reusing it
// for all ROWS rows, so neighbouring threads read neighbouring words of every row.
// Per-thread sums are reduced with subgroupAdd and one shared-memory slot per subgroup
// (SUBGROUPS), or with a shared-memory tree.
// Stacked matrices (projections of one input kept as one matrix) take one dispatch:
//   SPLIT_OUTPUT: rows from params.second on go to y_second, and with THIRD_OUTPUT rows from
//     params.third on to y_third (q, k and v).
//   BIAS: y[r] = W[r]·x + bias[r].
//   GATED: y[r] = act(W[r]·x) · W[second + r]·x for r < rows (gate and up, then the
//     activation of activation.wgsl); a workgroup's ROWS (1 or 2) rows use 2·ROWS sums.
// NORMED_INPUT (decode): the RMSNorm that makes the input runs in every workgroup instead of
// in a dispatch of its own, into shared memory: x' = rmsnorm(h)·norm_w, where h is x itself,
// or with RESIDUAL the residual stream after the block output x is added to it:
// h = stream_in + x (POST_NORM: + rmsnorm(x)·post_w, Gemma). With STREAM_OUT, workgroup 0
// writes h to stream_out; of several products that fold in one norm only the first does,
// so the others share no written buffer with it and need no barrier after it. Every
// workgroup reads the same few KiB, so they come from cache; what it saves is a dispatch,
// which costs more than the weights of a small matrix take to read.
// Q8_INPUT: x comes in Q8 form (q8_block.wgsl) and the type's part_dot_q8 multiplies it with
// dot4I8Packed: a quarter of the input's bytes per thread and no conversion of the quants to
// floats, which lifts Llama 8B's products from ~1.1 to ~1.5 TB/s on an H100.
// WIDE_Q8 (with Q8_INPUT, for the types with `wide_part_dot_q8`): parts of 32 or 64 values
// whose weights and input are read in 16-byte vectors (binding 11 holds the weights again as
// vectors; IQ4_XS's as 8-byte pairs), a few loads where the word-wide parts issue many: Llama
// 8B's products from ~1.5 to ~2.1-2.3 TB/s on an H200.
// SHUFFLED_TABLE (IQ4_XS on a Q8 input, with subgroups): the value table in registers, read
// with subgroupShuffle (quant_value_table.wgsl), TABLE_LANES (8 or 16) lanes of each subgroup
// holding it.

struct Params {
    // Rows in this chunk.
    rows: u32,
    blocks_per_row: u32,
    row_bytes: u32,
    // Element of y that receives the chunk's first row.
    output_offset: u32,
    // First row of the second (and third) part of a stacked matrix: see SPLIT_OUTPUT, GATED.
    second: u32,
    third: u32,
    // RMSNorm epsilon of NORMED_INPUT.
    eps: f32,
}

@group(0) @binding(0) var<storage, read> weights: array<u32>;
#ifdef Q8_INPUT
// x in Q8 form (quantize_q8.wgsl).
#ifdef WIDE_Q8
@group(0) @binding(1) var<storage, read> x_word_vecs: array<vec4<u32>>;
#ifdef TYPE_IQ4_XS
// The weights again, read 8 bytes at a time: IQ4_XS's 136-byte blocks are 8-aligned, so two
// 8-byte loads make a part's 16 quant bytes where 16-byte loads take two and word selects.
@group(0) @binding(11) var<storage, read> weight_pairs: array<vec2<u32>>;
#else
// The weights again, read 16 bytes at a time.
@group(0) @binding(11) var<storage, read> weight_vecs: array<vec4<u32>>;
#endif
#else
@group(0) @binding(1) var<storage, read> x_words: array<u32>;
#endif
@group(0) @binding(10) var<storage, read> x_scales: array<f32>;
#else
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
#endif
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// Defines rather than a uniform: its load would stand before every weight load.
const params = Params(P_ROWS, P_BLOCKS_PER_ROW, P_ROW_BYTES, P_OUTPUT_OFFSET, P_SECOND, P_THIRD, P_EPS);
#ifdef SPLIT_OUTPUT
@group(0) @binding(4) var<storage, read_write> y_second: array<f32>;
#endif
#ifdef THIRD_OUTPUT
@group(0) @binding(5) var<storage, read_write> y_third: array<f32>;
#endif
#ifdef BIAS
// Added to each output row as it is stored (a stacked matrix's parts' biases end to end).
@group(0) @binding(12) var<storage, read> bias: array<f32>;
#endif

#ifdef NORMED_INPUT
@group(0) @binding(6) var<storage, read> norm_w: array<vec4<f32>>;
#ifdef RESIDUAL
@group(0) @binding(7) var<storage, read> stream_in: array<vec4<f32>>;
#ifdef STREAM_OUT
@group(0) @binding(8) var<storage, read_write> stream_out: array<vec4<f32>>;
#endif
#endif
#ifdef POST_NORM
@group(0) @binding(9) var<storage, read> post_w: array<vec4<f32>>;
#endif
#endif

#include "quant_formats.wgsl"
#ifdef GATED
#include "activation.wgsl"
const SUMS = 2u * ROWS;
#else
const SUMS = ROWS;
#endif

// Per-row partial sums (component r for row r): one per subgroup (SUBGROUPS; sized for
// subgroups of one thread) or one per thread.
var<workgroup> partial: array<vec4<f32>, WG>;

#include "workgroup_total.wgsl"

#ifdef NORMED_INPUT

// h·norm_w of the normed input, X_VEC4S (the row length / 4) vectors; the products are
// scaled by the norm's 1/rms at the end rather than every value here.
var<workgroup> x_normed: array<vec4<f32>, X_VEC4S>;

fn rms_scale(ids: Ids, sum_of_squares: f32) -> f32 {
    return inverseSqrt(workgroup_total(ids, sum_of_squares) / f32(X_VEC4S * 4u) + params.eps);
}

// Fills x_normed and returns the norm's scale; same math as fused_residual_norm.wgsl, which
// prefill uses. The reduction's barriers publish x_normed to the workgroup.
fn normalize_input(ids: Ids, writes_stream: bool) -> f32 {
#ifdef POST_NORM
    var x_squares = 0.0;
    for (var i = ids.lid; i < X_VEC4S; i += WG) {
        let v = x[i];
        x_squares += dot(v, v);
    }
    let post_scale = rms_scale(ids, x_squares);
#endif
    var h_squares = 0.0;
    for (var i = ids.lid; i < X_VEC4S; i += WG) {
#ifdef RESIDUAL
#ifdef POST_NORM
        let h = stream_in[i] + x[i] * post_scale * post_w[i];
#else
        let h = stream_in[i] + x[i];
#endif
#ifdef STREAM_OUT
        if (writes_stream) {
            stream_out[i] = h;
        }
#endif
#else
        let h = x[i];
#endif
        x_normed[i] = h * norm_w[i];
        h_squares += dot(h, h);
    }
    return rms_scale(ids, h_squares);
}
#endif

#ifdef WIDE_Q8
alias PartInput = WideQ8Runs;
const UNIT_PARTS = WIDE_PARTS;

// The slice of x wide part `part` of the block at x_base multiplies.
fn part_input(x_base: u32, part: u32) -> PartInput {
    let base = x_base >> 4u;
    let v = vec4<u32>(base) + vec4<u32>(wide_run_vec(part, 0u), wide_run_vec(part, 1u), wide_run_vec(part, 2u), wide_run_vec(part, 3u));
    let ones = vec4<u32>(0x01010101u);
    var xq: WideQ8Runs;
    xq.r0 = x_word_vecs[v.x];
    xq.r1 = x_word_vecs[v.y];
    xq.scales = vec4<f32>(x_scales[v.x >> 1u], x_scales[v.y >> 1u], 0.0, 0.0);
    var sums = vec4<i32>(wide_dot(xq.r0, ones), wide_dot(xq.r1, ones), 0, 0);
    if (WIDE_RUNS > 2u) {
        xq.r2 = x_word_vecs[v.z];
        xq.r3 = x_word_vecs[v.w];
        xq.scales.z = x_scales[v.z >> 1u];
        xq.scales.w = x_scales[v.w >> 1u];
        sums.z = wide_dot(xq.r2, ones);
        sums.w = wide_dot(xq.r3, ones);
    }
    xq.sums = vec4<f32>(sums) * xq.scales;
    return xq;
}

fn input_dot(block_byte: u32, part: u32, input: PartInput) -> f32 {
    return wide_part_dot_q8(block_byte, part, input);
}
#else
#ifdef Q8_INPUT
const UNIT_PARTS = PARTS;
alias PartInput = Q8Runs;

// The slice of x a part multiplies, in Q8 form.
fn part_input(x_base: u32, part: u32) -> PartInput {
    let starts = x_base + vec4<u32>(run_start(part, 0u), run_start(part, 1u), run_start(part, 2u), run_start(part, 3u));
    let words = vec4<u32>(x_words[starts.x >> 2u], x_words[starts.y >> 2u], x_words[starts.z >> 2u], x_words[starts.w >> 2u]);
    let scales = vec4<f32>(x_scales[starts.x >> 5u], x_scales[starts.y >> 5u], x_scales[starts.z >> 5u], x_scales[starts.w >> 5u]);
    let ones = 0x01010101u;
    let sums = vec4<f32>(vec4<i32>(dot4I8Packed(words.x, ones), dot4I8Packed(words.y, ones), dot4I8Packed(words.z, ones), dot4I8Packed(words.w, ones)));
    return Q8Runs(words, scales, sums * scales);
}

fn input_dot(block_byte: u32, part: u32, input: PartInput) -> f32 {
    return part_dot_q8(block_byte, part, input);
}
#else
const UNIT_PARTS = PARTS;
// The slice of x a part multiplies and its run sums (for types with block minimums; unused
// ones compile away).
struct PartInput {
    xs: Runs,
    sums: vec4<f32>,
}

fn part_input(x_base: u32, part: u32) -> PartInput {
    let xs = x_runs(x_base, part);
    let one = vec4<f32>(1.0);
    return PartInput(xs, vec4<f32>(dot(xs.r0, one), dot(xs.r1, one), dot(xs.r2, one), dot(xs.r3, one)));
}

fn input_dot(block_byte: u32, part: u32, input: PartInput) -> f32 {
    return part_dot(block_byte, part, input.xs, input.sums);
}

// Four values of the input from value 4·i.
fn x_vec(i: u32) -> vec4<f32> {
#ifdef NORMED_INPUT
    return x_normed[i];
#else
    return x[i];
#endif
}

// The slice of x a part multiplies; runs start at multiples of 4.
fn x_runs(x_base: u32, part: u32) -> Runs {
    return Runs(
        x_vec((x_base + run_start(part, 0u)) >> 2u),
        x_vec((x_base + run_start(part, 1u)) >> 2u),
        x_vec((x_base + run_start(part, 2u)) >> 2u),
        x_vec((x_base + run_start(part, 3u)) >> 2u),
    );
}
#endif
#endif

// Sum `sum` of a workgroup whose first output row is first_row: sum s belongs to output row
// first_row + s % ROWS, from the matrix's second part for s ≥ ROWS (GATED).
fn sum_part_dot(sum: u32, first_row: u32, block: u32, part: u32, input: PartInput) -> f32 {
    let row = first_row + sum % ROWS;
    if (row >= params.rows) {
        return 0.0;
    }
    var matrix_row = row;
#ifdef GATED
    if (sum >= ROWS) {
        matrix_row += params.second;
    }
#endif
    return input_dot(matrix_row * params.row_bytes + block * BLOCK_BYTES, part, input);
}

fn store(row: u32, value: f32) {
#ifdef THIRD_OUTPUT
    if (row >= params.third) {
        y_third[row - params.third] = value;
        return;
    }
#endif
#ifdef SPLIT_OUTPUT
    if (row >= params.second) {
        y_second[row - params.second] = value;
        return;
    }
#endif
    y[params.output_offset + row] = value;
}

// Output row first_row + lid from the workgroup's reduced sums.
fn finish(row: u32, lid: u32, sums: vec4<f32>) {
#ifdef GATED
    store(row, activation(sums[lid]) * sums[lid + ROWS]);
#else
#ifdef BIAS
    store(row, sums[lid] + bias[params.output_offset + row]);
#else
    store(row, sums[lid]);
#endif
#endif
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#ifdef SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
) {
    load_value_table(lid);
#ifdef SHUFFLED_TABLE
    load_table_lanes(lane);
#endif
    let first_row = (wid.x + wid.y * nwg.x) * ROWS;
#ifdef SUBGROUPS
    let ids = Ids(lid, lane, subgroup, subgroups);
#else
    let ids = Ids(lid, 0u, 0u, 1u);
#endif
#ifdef NORMED_INPUT
    let input_scale = normalize_input(ids, first_row == 0u);
#else
    let input_scale = 1.0;
#endif
    let units = params.blocks_per_row * UNIT_PARTS;
    // Component s accumulates sum s (sum_part_dot); SUMS is 1, 2 or 4 and the branches on
    // it are resolved at compile time.
    var acc = vec4<f32>(0.0);
#ifdef SHUFFLED_TABLE
    // Every lane takes every turn of the loop, as the table's shuffles need: one past the
    // last unit repeats it and drops the result.
    let end = (units + WG - 1u) / WG * WG;
#else
    let end = units;
#endif
    for (var turn = lid; turn < end; turn += WG) {
        let unit = min(turn, units - 1u);
        let block = unit / UNIT_PARTS;
        let part = unit % UNIT_PARTS;
        let input = part_input(block * BLOCK_LEN, part);
        var sums = vec4<f32>(0.0);
        sums.x = sum_part_dot(0u, first_row, block, part, input);
        if (SUMS > 1u) {
            sums.y = sum_part_dot(1u, first_row, block, part, input);
        }
        if (SUMS > 2u) {
            sums.z = sum_part_dot(2u, first_row, block, part, input);
            sums.w = sum_part_dot(3u, first_row, block, part, input);
        }
        acc += select(vec4<f32>(0.0), sums, turn < units);
    }

#ifdef SUBGROUPS
    let sum = subgroupAdd(acc);
    if (lane == 0u) {
        partial[subgroup] = sum;
    }
    workgroupBarrier();
    if (lid < ROWS && first_row + lid < params.rows) {
        var total = vec4<f32>(0.0);
        for (var s = 0u; s < subgroups; s++) {
            total += partial[s];
        }
        finish(first_row + lid, lid, total * input_scale);
    }
#else
    partial[lid] = acc;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            partial[lid] += partial[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid < ROWS && first_row + lid < params.rows) {
        finish(first_row + lid, lid, partial[0] * input_scale);
    }
#endif
}
