// The rest of a section for 32-value blocks of nibbles that index a 16-entry table (IQ4_NL,
// MXFP4), laid out as in Q4_0: value j < 16 is the low nibble of quant byte j, value j + 16
// its high nibble; value = block_scale·table[nibble]. The including section defines
// BLOCK_LEN, BLOCK_BYTES, QUANTS_OFFSET (where the quant bytes start), TABLE (entries plus
// 128, for quant_value_table.wgsl) and block_scale. Blocks may start at any byte (MXFP4's are
// 17 bytes).
#include "quant_value_table.wgsl"
const PARTS = 2u;

fn dequant4(block_byte: u32, k: u32) -> vec4<f32> {
    let q = word_any(block_byte + QUANTS_OFFSET + (k & 15u));
    return block_scale(block_byte) * table_values(nibbles(q, (k >> 4u) * 4u));
}

// Part p holds quant bytes 8p..8p+7: values 8p.. (low nibbles) and 16+8p.. (high).
fn run_start(part: u32, run: u32) -> u32 {
    return part * 8u + (run & 1u) * 4u + (run >> 1u) * 16u;
}

fn part_dot(block_byte: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    let q = words2_any(block_byte + QUANTS_OFFSET + part * 8u);
    let w = Runs(table_values(nibbles(q.x, 0u)), table_values(nibbles(q.y, 0u)), table_values(nibbles(q.x, 4u)), table_values(nibbles(q.y, 4u)));
    return block_scale(block_byte) * runs_dot(w, xs);
}
