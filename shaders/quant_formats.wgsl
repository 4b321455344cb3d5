// Decoding of every supported weight type straight from its GGUF block layout, which the
// including shader binds as `weights: array<u32>`. One `TYPE_*` define selects a section.
// Every section provides:
//   BLOCK_LEN, BLOCK_BYTES: values and bytes per block. Plain types (F32, F16, BF16) use
//     blocks of 16 values, so their rows must hold a multiple of 16 values.
//   dequant4(block_byte, k) -> vec4<f32>: values k..k+3 of the block (k % 4 == 0), for the
//     tiled matmul and the embedding gather.
//   dequant8(block_byte, k) -> Values8: values k..k+7 (k % 8 == 0), for the conversion to f16;
//     the K-quants decode their scales once for the 8, the rest take two dequant4.
//   PARTS, run_start(part, run), part_dot(block_byte, part, xs, x_sums) -> f32: for the
//     matrix-vector kernel, where weight reads are the whole cost, the block is split into
//     PARTS parts of 16 values whose bytes are read as whole words exactly once. A part is 4
//     runs of 4 consecutive values, run r starting at value run_start(part, r) of the block;
//     part_dot is the dot product of the part with the matching slices of x (`xs`, whose
//     run sums are `x_sums`), with block scales applied once per run rather than per value.
//   WIDE_PARTS, WIDE_RUNS, wide_part_dot_q8(block_byte, part, xq) -> f32 (Q4_K, Q5_K, Q6_K,
//     IQ4_XS, with WIDE_Q8): the matrix-vector kernel on a Q8 input with 16-byte loads. Wide
//     part p multiplies WIDE_RUNS runs of 16 values, run r the 16-value vector of x that
//     wide_run_vec(p, r) names (`xq`, WideQ8Runs).
//   load_value_table(lid): called by every thread of a kernel before anything else (it may
//     hold a barrier); fills the shared value table of the table types (quant_value_table.wgsl).
// Quants become floats through the exponent trick (bits 0x4b000000 | q are the float
// 2^23 + q), an integer op and an add where a conversion would run at quarter rate.
// Results are vectors and structs rather than arrays: a private array indexed by a loop
// variable can end up in slow local memory.
// Blocks of 18, 22, 34, 110 and 210 bytes are only 2-byte aligned, hence the *_even readers;
// MXFP4's 17-byte blocks can start at any byte, hence the *_any readers.

// The 16 values of x that a part multiplies, as 4 runs of 4 consecutive values.
struct Runs {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
}

// The same 16 values in Q8 form (quantize_q8.wgsl), for the types with `part_dot_q8`: run r
// as 4 signed bytes in words[r], scales[r] the scale of its 32-value block, sums[r] the run's
// sum (scale included).
struct Q8Runs {
    words: vec4<u32>,
    scales: vec4<f32>,
    sums: vec4<f32>,
}

// Values k..k+7 of a block: k..k+3 in `low`, k+4..k+7 in `high`.
struct Values8 {
    low: vec4<f32>,
    high: vec4<f32>,
}

fn runs_dot(w: Runs, xs: Runs) -> f32 {
    return dot(w.r0, xs.r0) + dot(w.r1, xs.r1) + dot(w.r2, xs.r2) + dot(w.r3, xs.r3);
}

// The runs of 4 quants packed as bytes (`q`, one word a run) as floats less `bias`.
fn byte_runs(q: vec4<u32>, bias: f32) -> Runs {
    return Runs(byte_values(q.x, bias), byte_values(q.y, bias), byte_values(q.z, bias), byte_values(q.w, bias));
}

// The values of x a wide part multiplies (WIDE_Q8), in Q8 form: WIDE_RUNS (2 or 4) runs of 16
// values (see WIDE_PARTS above), with the scales of their 32-value blocks and their sums
// (scale included).
struct WideQ8Runs {
    r0: vec4<u32>,
    r1: vec4<u32>,
    r2: vec4<u32>,
    r3: vec4<u32>,
    scales: vec4<f32>,
    sums: vec4<f32>,
}

#ifdef WIDE_Q8
#ifndef TYPE_IQ4_XS
// The 16 bytes at the 2-aligned byte offset `byte`, from two aligned vectors: blocks of 210
// bytes sit at every even offset modulo 16.
fn vec_even(byte: u32) -> vec4<u32> {
    let v0 = weight_vecs[byte >> 4u];
    let v1 = weight_vecs[(byte >> 4u) + 1u];
    let k = (byte >> 2u) & 3u;
    let words = select(select(v0, vec4<u32>(v0.yzw, v1.x), k == 1u), select(vec4<u32>(v0.zw, v1.xy), vec4<u32>(v0.w, v1.xyz), k == 3u), k >= 2u);
    if ((byte & 2u) == 0u) {
        return words;
    }
    let next = select(select(v1.x, v1.y, k == 1u), select(v1.z, v1.w, k == 3u), k >= 2u);
    return (words >> vec4<u32>(16u)) | (vec4<u32>(words.yzw, next) << vec4<u32>(16u));
}
#endif

// The 16-value vector of x that run `run` of wide part `part` multiplies, counted from its
// block's first: half p%2 of 32-value block (p/2)·WIDE_RUNS + run for the K-quants; IQ4_XS's
// part p is 32-value block p, run r its half r.
fn wide_run_vec(part: u32, run: u32) -> u32 {
#ifdef TYPE_IQ4_XS
    return part * 2u + run;
#else
    return ((part >> 1u) * WIDE_RUNS + run) * 2u + (part & 1u);
#endif
}
#endif

// Σ of the 4 signed bytes of each word of `q` against those of `x`.
fn wide_dot(q: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot4I8Packed(q.x, x.x) + dot4I8Packed(q.y, x.y) + dot4I8Packed(q.z, x.z) + dot4I8Packed(q.w, x.w);
}

// Σ quant·x over a part in Q8 form, in units of the input's scale, for quants packed as
// signed bytes (one word a run).
fn q8_dot(q: vec4<u32>, xq: Q8Runs) -> f32 {
    return f32(wide_dot(q, xq.words));
}

// Σ x over a part in Q8 form.
fn q8_sum(xq: Q8Runs) -> f32 {
    return dot(xq.sums, vec4<f32>(1.0));
}

// The word at a 4-aligned byte offset.
fn word_at(byte: u32) -> u32 {
    return weights[byte >> 2u];
}

// The 4 bytes at a 2-aligned byte offset.
fn word_even(byte: u32) -> u32 {
    let i = byte >> 2u;
    let lo = weights[i];
    if ((byte & 2u) == 0u) {
        return lo;
    }
    return (lo >> 16u) | (weights[i + 1u] << 16u);
}

// The 8 bytes at a 2-aligned byte offset.
fn words2_even(byte: u32) -> vec2<u32> {
    let i = byte >> 2u;
    let a = vec2<u32>(weights[i], weights[i + 1u]);
    if ((byte & 2u) == 0u) {
        return a;
    }
    let b = vec2<u32>(weights[i + 1u], weights[i + 2u]);
    return (a >> vec2<u32>(16u)) | (b << vec2<u32>(16u));
}

// The 16 bytes at a 2-aligned byte offset.
fn words4_even(byte: u32) -> vec4<u32> {
    let i = byte >> 2u;
    let a = vec4<u32>(weights[i], weights[i + 1u], weights[i + 2u], weights[i + 3u]);
    if ((byte & 2u) == 0u) {
        return a;
    }
    let b = vec4<u32>(weights[i + 1u], weights[i + 2u], weights[i + 3u], weights[i + 4u]);
    return (a >> vec4<u32>(16u)) | (b << vec4<u32>(16u));
}

// The 4 bytes at any byte offset.
fn word_any(byte: u32) -> u32 {
    let i = byte >> 2u;
    let shift = (byte & 3u) * 8u;
    let lo = weights[i];
    if (shift == 0u) {
        return lo;
    }
    return (lo >> shift) | (weights[i + 1u] << (32u - shift));
}

// The 8 bytes at any byte offset.
fn words2_any(byte: u32) -> vec2<u32> {
    let i = byte >> 2u;
    let shift = (byte & 3u) * 8u;
    let a = vec2<u32>(weights[i], weights[i + 1u]);
    if (shift == 0u) {
        return a;
    }
    let b = vec2<u32>(weights[i + 1u], weights[i + 2u]);
    return (a >> vec2<u32>(shift)) | (b << vec2<u32>(32u - shift));
}

// The f16 at a 2-aligned byte offset.
fn half_at(byte: u32) -> f32 {
    return unpack2x16float(weights[byte >> 2u] >> ((byte & 2u) * 8u)).x;
}

// The byte at any offset.
fn byte_at(byte: u32) -> u32 {
    return (weights[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu;
}

// The 4 unsigned bytes of `w` as floats, each minus `bias` (an integer): exact.
fn byte_values(w: u32, bias: f32) -> vec4<f32> {
    return bitcast<vec4<f32>>(unpack4xU8(w) | vec4<u32>(0x4b000000u)) - (8388608.0 + bias);
}


// The low (shift 0) or high (shift 4) nibbles of the 4 bytes of `w`, one per byte.
fn nibbles(w: u32, shift: u32) -> u32 {
    return (w >> shift) & 0x0f0f0f0fu;
}

// Q5_0/Q5_1: the nibbles of `low` at `shift` with bits first..first+3 of `qh` as their
// fifth bits, one 5-bit value per byte.
fn five_bits(low: u32, shift: u32, qh: u32, first: u32) -> u32 {
    let h = qh >> first;
    return nibbles(low, shift) | ((h & 1u) << 4u) | ((h & 2u) << 11u) | ((h & 4u) << 18u) | ((h & 8u) << 25u);
}

// Types without a value table have nothing to load.
#ifndef TYPE_IQ4_NL
#ifndef TYPE_IQ4_XS
#ifndef TYPE_MXFP4
fn load_value_table(lid: u32) {}
#endif
#endif
#endif

#ifdef TYPE_F32
const BLOCK_LEN = 16u;
const BLOCK_BYTES = 64u;
const PARTS = 1u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let i = (block_byte >> 2u) + k;
    return bitcast<vec4<f32>>(vec4<u32>(weights[i], weights[i + 1u], weights[i + 2u], weights[i + 3u]));
}

fn run_start(part: u32, run: u32) -> u32 {
    return run * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    return runs_dot(Runs(dequant4(block_byte, 0u), dequant4(block_byte, 4u), dequant4(block_byte, 8u), dequant4(block_byte, 12u)), xs);
}
#endif

#ifdef TYPE_F16
const BLOCK_LEN = 16u;
const BLOCK_BYTES = 32u;
const PARTS = 1u;

// Rows hold a multiple of 16 values, so blocks are word-aligned.
fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let i = (block_byte >> 2u) + k / 2u;
    return vec4<f32>(unpack2x16float(weights[i]), unpack2x16float(weights[i + 1u]));
}

fn run_start(part: u32, run: u32) -> u32 {
    return run * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    return runs_dot(Runs(dequant4(block_byte, 0u), dequant4(block_byte, 4u), dequant4(block_byte, 8u), dequant4(block_byte, 12u)), xs);
}
#endif

#ifdef TYPE_BF16
const BLOCK_LEN = 16u;
const BLOCK_BYTES = 32u;
const PARTS = 1u;

// bf16 is the top half of an f32.
fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let i = (block_byte >> 2u) + k / 2u;
    let a = weights[i];
    let b = weights[i + 1u];
    return bitcast<vec4<f32>>(vec4<u32>(a << 16u, a & 0xffff0000u, b << 16u, b & 0xffff0000u));
}

fn run_start(part: u32, run: u32) -> u32 {
    return run * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    return runs_dot(Runs(dequant4(block_byte, 0u), dequant4(block_byte, 4u), dequant4(block_byte, 8u), dequant4(block_byte, 12u)), xs);
}
#endif

#ifdef TYPE_Q8_0
// { f16 d; i8 qs[32]; }: value = d·q. Flipping the sign bit turns q into q + 128.
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 34u;
const PARTS = 2u;

fn signed_values(w: u32) -> vec4<f32> {
    return byte_values(w ^ 0x80808080u, 128.0);
}

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    return half_at(block_byte) * signed_values(word_even(block_byte + 2u + k));
}

fn run_start(part: u32, run: u32) -> u32 {
    return part * 16u + run * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let q = words4_even(block_byte + 2u + part * 16u);
    let w = Runs(signed_values(q.x), signed_values(q.y), signed_values(q.z), signed_values(q.w));
    return half_at(block_byte) * runs_dot(w, xs);
}

// On x in Q8 form; here and in the other 32-value types a part lies in one block of x.
fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    return half_at(block_byte) * xq.scales.x * q8_dot(words4_even(block_byte + 2u + part * 16u), xq);
}
#endif

#ifdef TYPE_Q4_0
// { f16 d; u8 qs[16]; }: value j is d·(nibble - 8), low nibble of byte j for j < 16, else
// the high nibble of byte j - 16.
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 18u;
const PARTS = 2u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let q = word_even(block_byte + 2u + (k & 15u));
    return half_at(block_byte) * byte_values(nibbles(q, (k >> 4u) * 4u), 8.0);
}

// Part p holds bytes 8p..8p+7: values 8p..8p+7 (low nibbles) and 16+8p..16+8p+7 (high).
fn run_start(part: u32, run: u32) -> u32 {
    return part * 8u + (run & 1u) * 4u + (run >> 1u) * 16u;
}

// The part's nibbles, one per byte, a run a word.
fn part_quants(block_byte: u32, part: u32) -> vec4<u32> {
    let q = words2_even(block_byte + 2u + part * 8u);
    return vec4<u32>(nibbles(q.x, 0u), nibbles(q.y, 0u), nibbles(q.x, 4u), nibbles(q.y, 4u));
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    return half_at(block_byte) * runs_dot(byte_runs(part_quants(block_byte, part), 8.0), xs);
}

fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    return half_at(block_byte) * (xq.scales.x * q8_dot(part_quants(block_byte, part), xq) - 8.0 * q8_sum(xq));
}
#endif

#ifdef TYPE_Q4_1
// { f16 d; f16 m; u8 qs[16]; }: value = d·nibble + m, nibbles laid out as in Q4_0.
// 20-byte blocks are word-aligned: (d, m) is one word and the quants follow aligned.
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 20u;
const PARTS = 2u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let dm = unpack2x16float(word_at(block_byte));
    let q = word_at(block_byte + 4u + (k & 15u));
    return dm.x * byte_values(nibbles(q, (k >> 4u) * 4u), 0.0) + dm.y;
}

fn run_start(part: u32, run: u32) -> u32 {
    return part * 8u + (run & 1u) * 4u + (run >> 1u) * 16u;
}

// The part's nibbles, one per byte, a run a word.
fn part_quants(block_byte: u32, part: u32) -> vec4<u32> {
    let w = (block_byte + 4u + part * 8u) >> 2u;
    let q0 = weights[w];
    let q1 = weights[w + 1u];
    return vec4<u32>(nibbles(q0, 0u), nibbles(q1, 0u), nibbles(q0, 4u), nibbles(q1, 4u));
}

#include "quant_block_min.wgsl"
#endif

#ifdef TYPE_Q5_0
// { f16 d; u8 qh[4]; u8 qs[16]; }: value j is d·((nibble | bit j of qh << 4) - 16), nibbles
// laid out as in Q4_0.
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 22u;
const PARTS = 2u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let qh = word_even(block_byte + 2u);
    let q = word_even(block_byte + 6u + (k & 15u));
    return half_at(block_byte) * byte_values(five_bits(q, (k >> 4u) * 4u, qh, k), 16.0);
}

fn run_start(part: u32, run: u32) -> u32 {
    return part * 8u + (run & 1u) * 4u + (run >> 1u) * 16u;
}

// The part's 5-bit quants, one per byte, a run a word.
fn part_quants(block_byte: u32, part: u32) -> vec4<u32> {
    let qh = word_even(block_byte + 2u);
    let q = words2_even(block_byte + 6u + part * 8u);
    let first = part * 8u;
    return vec4<u32>(five_bits(q.x, 0u, qh, first), five_bits(q.y, 0u, qh, first + 4u), five_bits(q.x, 4u, qh, first + 16u), five_bits(q.y, 4u, qh, first + 20u));
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    return half_at(block_byte) * runs_dot(byte_runs(part_quants(block_byte, part), 16.0), xs);
}

fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    return half_at(block_byte) * (xq.scales.x * q8_dot(part_quants(block_byte, part), xq) - 16.0 * q8_sum(xq));
}
#endif

#ifdef TYPE_Q5_1
// { f16 d; f16 m; u8 qh[4]; u8 qs[16]; }: value j is d·(nibble | bit j of qh << 4) + m,
// nibbles laid out as in Q4_0. 24-byte blocks are word-aligned.
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 24u;
const PARTS = 2u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let dm = unpack2x16float(word_at(block_byte));
    let qh = word_at(block_byte + 4u);
    let q = word_at(block_byte + 8u + (k & 15u));
    return dm.x * byte_values(five_bits(q, (k >> 4u) * 4u, qh, k), 0.0) + dm.y;
}

fn run_start(part: u32, run: u32) -> u32 {
    return part * 8u + (run & 1u) * 4u + (run >> 1u) * 16u;
}

// The part's 5-bit quants, one per byte, a run a word.
fn part_quants(block_byte: u32, part: u32) -> vec4<u32> {
    let qh = word_at(block_byte + 4u);
    let w = (block_byte + 8u + part * 8u) >> 2u;
    let q0 = weights[w];
    let q1 = weights[w + 1u];
    let first = part * 8u;
    return vec4<u32>(five_bits(q0, 0u, qh, first), five_bits(q1, 0u, qh, first + 4u), five_bits(q0, 4u, qh, first + 16u), five_bits(q1, 4u, qh, first + 20u));
}

#include "quant_block_min.wgsl"
#endif

#ifdef TYPE_Q4_K
// { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }: 8 sub-blocks of 32 values, each with a
// 6-bit scale and min; value = d·scale·nibble - dmin·min. Values 64j..64j+31 are the low
// nibbles of qs[32j..32j+31], values 64j+32..64j+63 their high nibbles.
#include "quant_k_scales.wgsl"
const BLOCK_LEN = 256u;
const BLOCK_BYTES = 144u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let dm = unpack2x16float(word_at(block_byte));
    let sub_block = k >> 5u;
    let sm = k_scale_min(block_byte + 4u, sub_block) * dm;
    let q = word_at(block_byte + 16u + (k >> 6u) * 32u + (k & 31u));
    return sm.x * byte_values(nibbles(q, (sub_block & 1u) * 4u), 0.0) - sm.y;
}

// Eight values lie in one sub-block: one scale, two words of quants.
fn dequant8(block_byte: u32, k: u32) -> Values8 {
    let dm = unpack2x16float(word_at(block_byte));
    let sub_block = k >> 5u;
    let sm = k_scale_min(block_byte + 4u, sub_block) * dm;
    let w = (block_byte + 16u + (k >> 6u) * 32u + (k & 31u)) >> 2u;
    let shift = (sub_block & 1u) * 4u;
    return Values8(sm.x * byte_values(nibbles(weights[w], shift), 0.0) - sm.y, sm.x * byte_values(nibbles(weights[w + 1u], shift), 0.0) - sm.y);
}

// Part p holds qs bytes 32j+8i..32j+8i+7 (j = p/4, i = p%4): its low nibbles, then its high.
fn k_part_quants(block_byte: u32, part: u32) -> vec4<u32> {
    let w = (block_byte + 16u + (part >> 2u) * 32u + (part & 3u) * 8u) >> 2u;
    let q0 = weights[w];
    let q1 = weights[w + 1u];
    return vec4<u32>(nibbles(q0, 0u), nibbles(q1, 0u), nibbles(q0, 4u), nibbles(q1, 4u));
}

#ifdef WIDE_Q8
// Wide part p is qs bytes 16p..16p+15: the low nibbles, then the high.
fn k_wide_quants(block_vec: u32, part: u32) -> KWideQuants {
    let q = weight_vecs[block_vec + 1u + part];
    let nibble = vec4<u32>(0x0f0f0f0fu);
    return KWideQuants(q & nibble, (q >> vec4<u32>(4u)) & nibble);
}
#endif
#include "quant_k_parts.wgsl"
#endif

#ifdef TYPE_Q5_K
// { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }: Q4_K plus a fifth bit: value
// l of sub-block s (l < 32) takes bit s of qh[l].
#include "quant_k_scales.wgsl"
const BLOCK_LEN = 256u;
const BLOCK_BYTES = 176u;

// The nibbles of `low` at `shift` with bit `sub_block` of each byte of `qh` as fifth bits.
fn q5k_bits(low: u32, shift: u32, qh: u32, sub_block: u32) -> u32 {
    return nibbles(low, shift) | (((qh >> sub_block) & 0x01010101u) << 4u);
}

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let dm = unpack2x16float(word_at(block_byte));
    let sub_block = k >> 5u;
    let sm = k_scale_min(block_byte + 4u, sub_block) * dm;
    let q = word_at(block_byte + 48u + (k >> 6u) * 32u + (k & 31u));
    let qh = word_at(block_byte + 16u + (k & 31u));
    return sm.x * byte_values(q5k_bits(q, (sub_block & 1u) * 4u, qh, sub_block), 0.0) - sm.y;
}

// As Q4_K's, with two words of fifth bits.
fn dequant8(block_byte: u32, k: u32) -> Values8 {
    let dm = unpack2x16float(word_at(block_byte));
    let sub_block = k >> 5u;
    let sm = k_scale_min(block_byte + 4u, sub_block) * dm;
    let w = (block_byte + 48u + (k >> 6u) * 32u + (k & 31u)) >> 2u;
    let h = (block_byte + 16u + (k & 31u)) >> 2u;
    let shift = (sub_block & 1u) * 4u;
    let low = byte_values(q5k_bits(weights[w], shift, weights[h], sub_block), 0.0);
    let high = byte_values(q5k_bits(weights[w + 1u], shift, weights[h + 1u], sub_block), 0.0);
    return Values8(sm.x * low - sm.y, sm.x * high - sm.y);
}

// Parts as in Q4_K, their fifth bits in qh bytes 8i..8i+7.
fn k_part_quants(block_byte: u32, part: u32) -> vec4<u32> {
    let j = part >> 2u;
    let w = (block_byte + 48u + j * 32u + (part & 3u) * 8u) >> 2u;
    let h = (block_byte + 16u + (part & 3u) * 8u) >> 2u;
    let q0 = weights[w];
    let q1 = weights[w + 1u];
    let h0 = weights[h];
    let h1 = weights[h + 1u];
    return vec4<u32>(q5k_bits(q0, 0u, h0, 2u * j), q5k_bits(q1, 0u, h1, 2u * j), q5k_bits(q0, 4u, h0, 2u * j + 1u), q5k_bits(q1, 4u, h1, 2u * j + 1u));
}

#ifdef WIDE_Q8
// Wide parts as in Q4_K (qs from byte 48), their fifth bits in qh bytes 16(p%2)..16(p%2)+15.
fn k_wide_quants(block_vec: u32, part: u32) -> KWideQuants {
    let q = weight_vecs[block_vec + 3u + part];
    let qh = weight_vecs[block_vec + 1u + (part & 1u)];
    let nibble = vec4<u32>(0x0f0f0f0fu);
    let bit = vec4<u32>(0x01010101u);
    let s = 2u * (part >> 1u);
    return KWideQuants(
        (q & nibble) | (((qh >> vec4<u32>(s)) & bit) << vec4<u32>(4u)),
        ((q >> vec4<u32>(4u)) & nibble) | (((qh >> vec4<u32>(s + 1u)) & bit) << vec4<u32>(4u)),
    );
}
#endif
#include "quant_k_parts.wgsl"
#endif

#ifdef TYPE_Q6_K
// { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }: two halves of 128 values; in half n,
// value 32r+l (quadrant r, l < 32) has its low 4 bits in nibble r/2 of ql[64n+32(r%2)+l],
// its high 2 bits in bits 2r..2r+1 of qh[32n+l] and scale scales[8n+2r+l/16];
// value = d·scale·(q - 32).
const BLOCK_LEN = 256u;
const BLOCK_BYTES = 210u;
const PARTS = 16u;

fn q6_scale(block_byte: u32, index: u32) -> f32 {
    return f32(bitcast<i32>(byte_at(block_byte + 192u + index) << 24u) >> 24u);
}

// Values of quadrant `quadrant` from the nibbles of `low` at `shift` and the 2-bit fields
// of `qh`, centred on zero.
fn q6_values(low: u32, shift: u32, qh: u32, quadrant: u32) -> vec4<f32> {
    return byte_values(q6_bytes(low, shift, qh, quadrant), 32.0);
}

// The same values as bytes of 0..63, not yet centred.
fn q6_bytes(low: u32, shift: u32, qh: u32, quadrant: u32) -> u32 {
    return nibbles(low, shift) | (((qh >> (2u * quadrant)) & 0x03030303u) << 4u);
}

// Where values k.. (k % 4 == 0, within one 16-value scale) lie: their low bits from byte
// `low` at nibble `shift`, their high bits from byte `high` at quadrant `quadrant`'s field,
// their scale with d applied.
struct Q6Run {
    low: u32,
    high: u32,
    shift: u32,
    quadrant: u32,
    scale: f32,
}

fn q6_run(block_byte: u32, k: u32) -> Q6Run {
    let half_block = k >> 7u;
    let quadrant = (k >> 5u) & 3u;
    let l = k & 31u;
    let scale = half_at(block_byte + 208u) * q6_scale(block_byte, half_block * 8u + quadrant * 2u + (l >> 4u));
    return Q6Run(block_byte + half_block * 64u + (quadrant & 1u) * 32u + l, block_byte + 128u + half_block * 32u + l, (quadrant >> 1u) * 4u, quadrant, scale);
}

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let run = q6_run(block_byte, k);
    return run.scale * q6_values(word_even(run.low), run.shift, word_even(run.high), run.quadrant);
}

// Eight values share a scale (16 do).
fn dequant8(block_byte: u32, k: u32) -> Values8 {
    let run = q6_run(block_byte, k);
    let low = words2_even(run.low);
    let qh = words2_even(run.high);
    return Values8(run.scale * q6_values(low.x, run.shift, qh.x, run.quadrant), run.scale * q6_values(low.y, run.shift, qh.y, run.quadrant));
}

// Part p covers l = 4(p%8)..4(p%8)+3 of all four quadrants of half p/8.
fn run_start(part: u32, run: u32) -> u32 {
    return (part >> 3u) * 128u + run * 32u + (part & 7u) * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let half_block = part >> 3u;
    let l = (part & 7u) * 4u;
    let qa = word_even(block_byte + half_block * 64u + l);
    let qb = word_even(block_byte + half_block * 64u + 32u + l);
    let qh = word_even(block_byte + 128u + half_block * 32u + l);
    let s = half_block * 8u + (l >> 4u);
    let sum = q6_scale(block_byte, s) * dot(q6_values(qa, 0u, qh, 0u), xs.r0)
        + q6_scale(block_byte, s + 2u) * dot(q6_values(qb, 0u, qh, 1u), xs.r1)
        + q6_scale(block_byte, s + 4u) * dot(q6_values(qa, 4u, qh, 2u), xs.r2)
        + q6_scale(block_byte, s + 6u) * dot(q6_values(qb, 4u, qh, 3u), xs.r3);
    return half_at(block_byte + 208u) * sum;
}

// part_dot on x in Q8 form: each run lies in its own 32-value block of x; the centring by 32
// comes off as 32 times the run's sum.
fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    let half_block = part >> 3u;
    let l = (part & 7u) * 4u;
    let qa = word_even(block_byte + half_block * 64u + l);
    let qb = word_even(block_byte + half_block * 64u + 32u + l);
    let qh = word_even(block_byte + 128u + half_block * 32u + l);
    let s = half_block * 8u + (l >> 4u);
    let q = vec4<u32>(q6_bytes(qa, 0u, qh, 0u), q6_bytes(qb, 0u, qh, 1u), q6_bytes(qa, 4u, qh, 2u), q6_bytes(qb, 4u, qh, 3u));
    let dots = vec4<f32>(vec4<i32>(
        dot4I8Packed(q.x, xq.words.x),
        dot4I8Packed(q.y, xq.words.y),
        dot4I8Packed(q.z, xq.words.z),
        dot4I8Packed(q.w, xq.words.w),
    ));
    let scales = vec4<f32>(q6_scale(block_byte, s), q6_scale(block_byte, s + 2u), q6_scale(block_byte, s + 4u), q6_scale(block_byte, s + 6u));
    return half_at(block_byte + 208u) * dot(scales, dots * xq.scales - 32.0 * xq.sums);
}

#ifdef WIDE_Q8
// Wide parts: part p covers l = 16(p%2)..16(p%2)+15 of all four quadrants of half p/2 (run r
// quadrant r): 16 bytes of ql for quadrants 0 and 2, 16 for 1 and 3, 16 of qh.
const WIDE_PARTS = 4u;
const WIDE_RUNS = 4u;

fn wide_part_dot_q8(block_byte: u32, part: u32, xq: WideQ8Runs) -> f32 {
    let half_block = part >> 1u;
    let l = (part & 1u) * 16u;
    let qa = vec_even(block_byte + half_block * 64u + l);
    let qb = vec_even(block_byte + half_block * 64u + 32u + l);
    let qh = vec_even(block_byte + 128u + half_block * 32u + l);
    let low = vec4<u32>(0x0f0f0f0fu);
    let high = vec4<u32>(0x03030303u);
    let dots = vec4<f32>(vec4<i32>(
        wide_dot((qa & low) | ((qh & high) << vec4<u32>(4u)), xq.r0),
        wide_dot((qb & low) | (((qh >> vec4<u32>(2u)) & high) << vec4<u32>(4u)), xq.r1),
        wide_dot(((qa >> vec4<u32>(4u)) & low) | (((qh >> vec4<u32>(4u)) & high) << vec4<u32>(4u)), xq.r2),
        wide_dot(((qb >> vec4<u32>(4u)) & low) | (((qh >> vec4<u32>(6u)) & high) << vec4<u32>(4u)), xq.r3),
    ));
    // Scale 8n + 2r + l/16 of quadrant r: bytes l/16 and l/16 + 2 of the half's two words.
    let s = block_byte + 192u + half_block * 8u;
    let shift = (part & 1u) * 8u;
    let s01 = word_even(s) >> shift;
    let s23 = word_even(s + 4u) >> shift;
    let scales = vec4<f32>((vec4<i32>(bitcast<i32>(s01 << 24u), bitcast<i32>(s01 << 8u), bitcast<i32>(s23 << 24u), bitcast<i32>(s23 << 8u))) >> vec4<u32>(24u));
    return half_at(block_byte + 208u) * dot(scales, dots * xq.scales - 32.0 * xq.sums);
}
#endif
#endif

#ifdef TYPE_Q2_K
// { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin; }: sixteen sub-blocks of 16 values; in half
// n, value 32g+l (group g, l < 32) has its 2 bits in bits 2g..2g+1 of qs[32n+l] and scale
// byte scales[8n+2g+l/16] (scale in the low nibble, min in the high);
// value = d·scale·q - dmin·min. 84-byte blocks are word-aligned.
const BLOCK_LEN = 256u;
const BLOCK_BYTES = 84u;
const PARTS = 16u;

// The 2-bit fields at `shift` of the 4 bytes of `w`, one per byte.
fn two_bit_fields(w: u32, shift: u32) -> u32 {
    return (w >> shift) & 0x03030303u;
}

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let dm = unpack2x16float(word_at(block_byte + 80u));
    let half_block = k >> 7u;
    let group = (k >> 5u) & 3u;
    let l = k & 31u;
    let sm = byte_at(block_byte + half_block * 8u + group * 2u + (l >> 4u));
    let q = word_at(block_byte + 16u + half_block * 32u + l);
    return dm.x * f32(sm & 15u) * byte_values(two_bit_fields(q, group * 2u), 0.0) - dm.y * f32(sm >> 4u);
}

// Part p covers l = 4(p%8)..4(p%8)+3 of all four groups of half p/8, as in Q6_K.
fn run_start(part: u32, run: u32) -> u32 {
    return (part >> 3u) * 128u + run * 32u + (part & 7u) * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let dm = unpack2x16float(word_at(block_byte + 80u));
    let half_block = part >> 3u;
    let l = (part & 7u) * 4u;
    let q = word_at(block_byte + 16u + half_block * 32u + l);
    // Groups 0 and 1 take scale bytes l/16 and l/16 + 2 of the half's first word, groups 2
    // and 3 the same bytes of its second.
    let shift = (l >> 4u) * 8u;
    let s01 = word_at(block_byte + half_block * 8u) >> shift;
    let s23 = word_at(block_byte + half_block * 8u + 4u) >> shift;
    let scales = vec4<f32>(vec4<u32>(s01, s01 >> 16u, s23, s23 >> 16u) & vec4<u32>(15u));
    let mins = vec4<f32>((vec4<u32>(s01 >> 4u, s01 >> 20u, s23 >> 4u, s23 >> 20u)) & vec4<u32>(15u));
    let dots = vec4<f32>(
        dot(byte_values(two_bit_fields(q, 0u), 0.0), xs.r0),
        dot(byte_values(two_bit_fields(q, 2u), 0.0), xs.r1),
        dot(byte_values(two_bit_fields(q, 4u), 0.0), xs.r2),
        dot(byte_values(two_bit_fields(q, 6u), 0.0), xs.r3),
    );
    return dm.x * dot(scales, dots) - dm.y * dot(mins, x_sums);
}
#endif

#ifdef TYPE_Q3_K
// { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d; }: Q2_K's layout of 2-bit fields and
// sub-blocks, plus a third bit: value 32g+l of half n takes bit 4n+g of hmask[l]; value =
// d·(scale - 32)·(q - 4). Scale s (6 bits): low 4 bits in nibble s/8 of scales[s%8], high 2
// bits in bits 2(s/4)..2(s/4)+1 of scales[8+s%4].
const BLOCK_LEN = 256u;
const BLOCK_BYTES = 110u;
const PARTS = 16u;

// Values of group `group` of half `half_block`: the 2-bit fields of `q` and the hmask bits
// of `hm`, centred on zero.
fn q3_values(q: u32, hm: u32, half_block: u32, group: u32) -> vec4<f32> {
    let bits = ((q >> (2u * group)) & 0x03030303u) | (((hm >> (4u * half_block + group)) & 0x01010101u) << 2u);
    return byte_values(bits, 4.0);
}

// Scale `s` minus 32, from the 8 low-nibble bytes `lows` and the 4 high-bit bytes `highs`.
fn q3_scale(lows: vec2<u32>, highs: u32, s: u32) -> f32 {
    let low_byte = select(lows.x, lows.y, (s & 4u) != 0u) >> ((s & 3u) * 8u);
    let low = (low_byte >> ((s >> 3u) * 4u)) & 15u;
    let high = (highs >> ((s & 3u) * 8u + (s >> 2u) * 2u)) & 3u;
    return f32(low | (high << 4u)) - 32.0;
}

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let half_block = k >> 7u;
    let group = (k >> 5u) & 3u;
    let l = k & 31u;
    let q = word_even(block_byte + 32u + half_block * 32u + l);
    let hm = word_even(block_byte + l);
    let scale = q3_scale(words2_even(block_byte + 96u), word_even(block_byte + 104u), half_block * 8u + group * 2u + (l >> 4u));
    return half_at(block_byte + 108u) * scale * q3_values(q, hm, half_block, group);
}

fn run_start(part: u32, run: u32) -> u32 {
    return (part >> 3u) * 128u + run * 32u + (part & 7u) * 4u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let half_block = part >> 3u;
    let l = (part & 7u) * 4u;
    let q = word_even(block_byte + 32u + half_block * 32u + l);
    let hm = word_even(block_byte + l);
    let lows = words2_even(block_byte + 96u);
    let highs = word_even(block_byte + 104u);
    let s = half_block * 8u + (l >> 4u);
    let sum = q3_scale(lows, highs, s) * dot(q3_values(q, hm, half_block, 0u), xs.r0)
        + q3_scale(lows, highs, s + 2u) * dot(q3_values(q, hm, half_block, 1u), xs.r1)
        + q3_scale(lows, highs, s + 4u) * dot(q3_values(q, hm, half_block, 2u), xs.r2)
        + q3_scale(lows, highs, s + 6u) * dot(q3_values(q, hm, half_block, 3u), xs.r3);
    return half_at(block_byte + 108u) * sum;
}
#endif

#ifdef TYPE_IQ4_NL
// { f16 d; u8 qs[16]; }: nibbles laid out as in Q4_0, each indexing the non-linear table;
// value = d·table[nibble].
#include "quant_iq4_table.wgsl"
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 18u;
const QUANTS_OFFSET = 2u;
const TABLE = IQ4_TABLE;

fn block_scale(block_byte: u32) -> f32 {
    return half_at(block_byte);
}
#include "quant_table_block.wgsl"
#endif

#ifdef TYPE_IQ4_XS
// { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }: eight IQ4_NL-like blocks of 32 values
// (nibbles of block b in qs[16b..16b+15]) with 6-bit scales: low 4 bits in nibble b of the
// word scales_l, high 2 bits in bits 2b..2b+1 of scales_h; value = d·(scale - 32)·table[q].
// 136-byte blocks are 8-byte aligned (the wide parts read them 8 bytes at a time).
#include "quant_iq4_table.wgsl"
const TABLE = IQ4_TABLE;
#include "quant_value_table.wgsl"
const BLOCK_LEN = 256u;
const BLOCK_BYTES = 136u;
const PARTS = 16u;

// d times block `b`'s scale, from the block's first 8 bytes.
fn iq4_xs_head_scale(head: vec2<u32>, b: u32) -> f32 {
    let low = (head.y >> (4u * b)) & 15u;
    let high = (head.x >> (16u + 2u * b)) & 3u;
    return unpack2x16float(head.x).x * (f32(low | (high << 4u)) - 32.0);
}

fn iq4_xs_scale(block_byte: u32, b: u32) -> f32 {
    return iq4_xs_head_scale(vec2<u32>(word_at(block_byte), word_at(block_byte + 4u)), b);
}

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let b = k >> 5u;
    let q = word_at(block_byte + 8u + b * 16u + (k & 15u));
    return iq4_xs_scale(block_byte, b) * table_values(nibbles(q, ((k >> 4u) & 1u) * 4u));
}

// Part p holds bytes 8(p%2)..8(p%2)+7 of block p/2: its values 8(p%2).. (low nibbles) and
// 16+8(p%2).. (high).
fn run_start(part: u32, run: u32) -> u32 {
    return (part >> 1u) * 32u + (part & 1u) * 8u + (run & 1u) * 4u + (run >> 1u) * 16u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let w = (block_byte + 8u + part * 8u) >> 2u;
    let q0 = weights[w];
    let q1 = weights[w + 1u];
    let v = Runs(table_values(nibbles(q0, 0u)), table_values(nibbles(q1, 0u)), table_values(nibbles(q0, 4u)), table_values(nibbles(q1, 4u)));
    return iq4_xs_scale(block_byte, part >> 1u) * runs_dot(v, xs);
}

#ifdef Q8_INPUT
// part_dot on x in Q8 form: the part lies in one 32-value block of x.
fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    let w = (block_byte + 8u + part * 8u) >> 2u;
    let q0 = table_bytes(weights[w]);
    let q1 = table_bytes(weights[w + 1u]);
    let dots = dot4I8Packed(q0.x, xq.words.x) + dot4I8Packed(q1.x, xq.words.y) + dot4I8Packed(q0.y, xq.words.z) + dot4I8Packed(q1.y, xq.words.w);
    return iq4_xs_scale(block_byte, part >> 1u) * xq.scales.x * f32(dots);
}
#endif

#ifdef WIDE_Q8
// Wide parts: part p is block p whole, its 16 bytes of nibbles two 8-byte reads
// (`weight_pairs`; H200, tg128 of Llama 3.2 3B all IQ4_XS +3% against 16-byte reads, 8 bytes off
// a 16-byte boundary in every other block): the low nibbles are run 0 (values 0..15), the high
// ones run 1 (values 16..31), both in one 32-value block of x.
const WIDE_PARTS = 8u;
const WIDE_RUNS = 2u;

fn wide_part_dot_q8(block_byte: u32, part: u32, xq: WideQ8Runs) -> f32 {
    let block_pair = block_byte >> 3u;
    let first = block_pair + 1u + part * 2u;
    let q = vec4<u32>(weight_pairs[first], weight_pairs[first + 1u]);
    let a = table_bytes(q.x);
    let b = table_bytes(q.y);
    let c = table_bytes(q.z);
    let d = table_bytes(q.w);
    let dots = wide_dot(vec4<u32>(a.x, b.x, c.x, d.x), xq.r0) + wide_dot(vec4<u32>(a.y, b.y, c.y, d.y), xq.r1);
    return iq4_xs_head_scale(weight_pairs[block_pair], part) * xq.scales.x * f32(dots);
}
#endif
#endif

#ifdef TYPE_MXFP4
// { u8 e; u8 qs[16]; }: nibbles laid out as in Q4_0, each an FP4 (E2M1) value; ggml keeps
// them doubled (0, 1, 2, 3, 4, 6, 8, 12 and negatives, sign in bit 3) and halves the E8M0
// scale: value = 2^(e - 128)·table[nibble].
const BLOCK_LEN = 32u;
const BLOCK_BYTES = 17u;
const QUANTS_OFFSET = 1u;
const TABLE = vec4<u32>(0x83828180u, 0x8c888684u, 0x7d7e7f80u, 0x74787a7cu);

// 2^(e - 128): the f32 subnormals 2^-128 and 2^-127 for e < 2.
fn block_scale(block_byte: u32) -> f32 {
    let e = byte_at(block_byte);
    return bitcast<f32>(select((e - 1u) << 23u, 0x00200000u << e, e < 2u));
}
#include "quant_table_block.wgsl"
#endif

// The other types read a word or two of scale a value run: two dequant4.
#ifndef TYPE_Q4_K
#ifndef TYPE_Q5_K
#ifndef TYPE_Q6_K
fn dequant8(block_byte: u32, k: u32) -> Values8 {
    return Values8(dequant4(block_byte, k), dequant4(block_byte, k + 4u));
}
#endif
#endif
#endif
