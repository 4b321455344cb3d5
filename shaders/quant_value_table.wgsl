// The 16 values a table type's nibbles index (IQ4_NL and IQ4_XS's non-linear levels, MXFP4's
// FP4 values), as floats in shared memory: one load per value. Unpacking them from the packed
// constant took about a dozen integer instructions per value and left the decode products
// ALU-bound (H100, Llama 8B shape: IQ4_XS decoded at 78 tokens/s against Q4_K_M's 177).
// The including section defines TABLE: the entries plus 128, one byte each, four to a word.
var<workgroup> value_table: array<f32, 16>;

fn load_value_table(lid: u32) {
    if (lid < 16u) {
        value_table[lid] = f32((TABLE[lid >> 2u] >> ((lid & 3u) * 8u)) & 0xffu) - 128.0;
    }
    workgroupBarrier();
}

// The table's values for the 4 indices of `w`, one per byte.
fn table_values(w: u32) -> vec4<f32> {
    return vec4<f32>(value_table[w & 0xffu], value_table[(w >> 8u) & 0xffu], value_table[(w >> 16u) & 0xffu], value_table[w >> 24u]);
}
