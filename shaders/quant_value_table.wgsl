// The 16 values a table type's nibbles index (IQ4_NL and IQ4_XS's non-linear levels, MXFP4's
// FP4 values), as floats in shared memory: one load per value. Unpacking them from the packed
// constant took about a dozen integer instructions per value and left the decode products
// ALU-bound (H100, Llama 8B shape: IQ4_XS decoded at 78 tokens/s against Q4_K_M's 177).
// The including section defines TABLE: the entries plus 128, one byte each, four to a word.
var<workgroup> value_table: array<f32, 16>;

// TABLE's entry `n` plus 128.
fn table_entry(n: u32) -> u32 {
    return (TABLE[n >> 2u] >> ((n & 3u) * 8u)) & 0xffu;
}
#ifdef Q8_INPUT
// For the products on a Q8 input (matmul_vector.wgsl): the values of both nibbles of every
// byte as signed bytes, the low nibble's in bits 0-7 and the high nibble's in bits 16-23, so
// that one load a byte and two pack4xU8 make a word of quants four bytes of each.
var<workgroup> pair_table: array<u32, 256>;

// Entry `n` as a signed byte: flipping bit 7 of entry + 128.
fn table_byte(n: u32) -> u32 {
    return table_entry(n) ^ 0x80u;
}
#endif

fn load_value_table(lid: u32) {
    if (lid < 16u) {
        value_table[lid] = f32(table_entry(lid)) - 128.0;
    }
#ifdef Q8_INPUT
    for (var b = lid; b < 256u; b += WG) {
        pair_table[b] = table_byte(b & 15u) | (table_byte(b >> 4u) << 16u);
    }
#endif
    workgroupBarrier();
}

// The table's values for the 4 indices of `w`, one per byte.
fn table_values(w: u32) -> vec4<f32> {
    return vec4<f32>(value_table[w & 0xffu], value_table[(w >> 8u) & 0xffu], value_table[(w >> 16u) & 0xffu], value_table[w >> 24u]);
}
#ifdef Q8_INPUT

// The table's values for the nibbles of the 4 bytes of `w` as signed bytes: those of the low
// nibbles in x, of the high nibbles in y.
fn table_bytes(w: u32) -> vec2<u32> {
    let e = vec4<u32>(pair_table[w & 0xffu], pair_table[(w >> 8u) & 0xffu], pair_table[(w >> 16u) & 0xffu], pair_table[w >> 24u]);
    return vec2<u32>(pack4xU8(e), pack4xU8(e >> vec4<u32>(16u)));
}
#endif
