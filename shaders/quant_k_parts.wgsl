// The matrix-vector parts of Q4_K and Q5_K, which differ only in where their quants come from.
// The including section defines
//   k_part_quants(block_byte, part) -> vec4<u32>: the part's quants, one per byte, a run a word;
//   k_wide_quants(block_vec, part) -> KWideQuants (WIDE_Q8): a wide part's quants.
// Part p (j = p/4, i = p%4) holds values 64j+8i..64j+8i+7 of sub-block 2j (runs 0 and 1) and
// the same values of sub-block 2j+1, 32 further on (runs 2 and 3).
const PARTS = 16u;

fn run_start(part: u32, run: u32) -> u32 {
    return (part >> 2u) * 64u + (part & 3u) * 8u + (run & 1u) * 4u + (run >> 1u) * 32u;
}

// (d·scale, dmin·min) of the part's low sub-block in xy, of its high one in zw.
fn k_part_scales(block_byte: u32, part: u32) -> vec4<f32> {
    let dm = unpack2x16float(word_at(block_byte));
    let j = part >> 2u;
    return vec4<f32>(k_scale_min(block_byte + 4u, 2u * j) * dm, k_scale_min(block_byte + 4u, 2u * j + 1u) * dm);
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let s = k_part_scales(block_byte, part);
    let w = byte_runs(k_part_quants(block_byte, part), 0.0);
    let low_dot = dot(w.r0, xs.r0) + dot(w.r1, xs.r1);
    let high_dot = dot(w.r2, xs.r2) + dot(w.r3, xs.r3);
    return s.x * low_dot - s.y * (x_sums.x + x_sums.y) + s.z * high_dot - s.w * (x_sums.z + x_sums.w);
}

// part_dot on x in Q8 form: runs 0 and 1 lie in one 32-value block of x, as do runs 2 and 3.
fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    let s = k_part_scales(block_byte, part);
    let q = k_part_quants(block_byte, part);
    let low_dot = dot4I8Packed(q.x, xq.words.x) + dot4I8Packed(q.y, xq.words.y);
    let high_dot = dot4I8Packed(q.z, xq.words.z) + dot4I8Packed(q.w, xq.words.w);
    return s.x * xq.scales.x * f32(low_dot) - s.y * (xq.sums.x + xq.sums.y)
        + s.z * xq.scales.z * f32(high_dot) - s.w * (xq.sums.z + xq.sums.w);
}

#ifdef WIDE_Q8
// Wide parts: part p holds values 16(p%2)..16(p%2)+15 of sub-block 2(p/2) (run 0) and of
// sub-block 2(p/2)+1 (run 1), read in 16-byte vectors; the block's first 16 bytes (d, dmin and
// the scales) are one more. Blocks (144 and 176 bytes) start on 16-byte boundaries.
const WIDE_PARTS = 8u;
const WIDE_RUNS = 2u;

// A wide part's quants, one per byte: run 0 in `low`, run 1 in `high`.
struct KWideQuants {
    low: vec4<u32>,
    high: vec4<u32>,
}

fn wide_part_dot_q8(block_byte: u32, part: u32, xq: WideQ8Runs) -> f32 {
    let head = weight_vecs[block_byte >> 4u];
    let q = k_wide_quants(block_byte >> 4u, part);
    let dm = unpack2x16float(head.x);
    let j = part >> 1u;
    let low = k_scale_min_of(head.yzw, 2u * j) * dm;
    let high = k_scale_min_of(head.yzw, 2u * j + 1u) * dm;
    let low_dot = wide_dot(q.low, xq.r0);
    let high_dot = wide_dot(q.high, xq.r1);
    return low.x * xq.scales.x * f32(low_dot) - low.y * xq.sums.x + high.x * xq.scales.y * f32(high_dot) - high.y * xq.sums.y;
}
#endif
