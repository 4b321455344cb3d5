// The decode products of the 32-value types with a block minimum (Q4_1, Q5_1: value =
// d·q + m), over the including section's part_quants: on x as f32 and in Q8 form (a part
// lies in one block of x).

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let dm = unpack2x16float(word_at(block_byte));
    return dm.x * runs_dot(byte_runs(part_quants(block_byte, part), 0.0), xs) + dm.y * dot(x_sums, vec4<f32>(1.0));
}

fn part_dot_q8(block_byte: u32, part: u32, xq: Q8Runs) -> f32 {
    let dm = unpack2x16float(word_at(block_byte));
    return dm.x * xq.scales.x * q8_dot(part_quants(block_byte, part), xq) + dm.y * q8_sum(xq);
}
