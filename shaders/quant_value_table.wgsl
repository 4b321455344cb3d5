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
// Entry `n` as a signed byte: flipping bit 7 of entry + 128.
fn table_byte(n: u32) -> u32 {
    return table_entry(n) ^ 0x80u;
}
#ifdef SHUFFLED_TABLE
// For the products on a Q8 input with subgroups of at least 8 (matmul_vector.wgsl), the table
// in registers: lane l of every subgroup holds entry l % TABLE_LANES (and, with TABLE_LANES
// 8, entry 8 + l % 8 in table_high) as a signed byte shifted to byte i of component i, so a
// lookup is one subgroupShuffle and four lookups' bytes combine with ORs, and no workgroup
// fills a shared table behind a barrier first. H200, Llama 3.2 3B all IQ4_XS: gate+up 22.3 ->
// 19.0 µs on an idle GPU, tg128 422 -> 440 tok/s at depth 0, 380 -> 396 at 4096.
var<private> table_low: vec4<u32>;
var<private> table_high: vec4<u32>;

fn load_table_lanes(lane: u32) {
    let shifts = vec4<u32>(0u, 8u, 16u, 24u);
    let n = lane % TABLE_LANES;
    table_low = vec4<u32>(table_byte(n)) << shifts;
    table_high = vec4<u32>(table_byte((n + TABLE_LANES) & 15u)) << shifts;
}

// Entries n.x..n.w (each below 16) as the bytes of one word. Every lane of the subgroup
// must take part: the entries come from its lanes 0..TABLE_LANES-1.
fn table_word(n: vec4<u32>) -> u32 {
    let lane = n % vec4<u32>(TABLE_LANES);
    var v = vec4<u32>(subgroupShuffle(table_low.x, lane.x), subgroupShuffle(table_low.y, lane.y), subgroupShuffle(table_low.z, lane.z), subgroupShuffle(table_low.w, lane.w));
    if (TABLE_LANES < 16u) {
        let high = vec4<u32>(subgroupShuffle(table_high.x, lane.x), subgroupShuffle(table_high.y, lane.y), subgroupShuffle(table_high.z, lane.z), subgroupShuffle(table_high.w, lane.w));
        v = select(v, high, n >= vec4<u32>(TABLE_LANES));
    }
    return v.x | v.y | v.z | v.w;
}
#else
// For the products on a Q8 input (matmul_vector.wgsl): the values of both nibbles of every
// byte as signed bytes, the low nibble's in bits 0-7 and the high nibble's in bits 16-23, so
// that one load a byte and two pack4xU8 make a word of quants four bytes of each.
var<workgroup> pair_table: array<u32, 256>;
#endif
#endif

fn load_value_table(lid: u32) {
#ifndef SHUFFLED_TABLE
    if (lid < 16u) {
        value_table[lid] = f32(table_entry(lid)) - 128.0;
    }
#ifdef Q8_INPUT
    for (var b = lid; b < 256u; b += WG) {
        pair_table[b] = table_byte(b & 15u) | (table_byte(b >> 4u) << 16u);
    }
#endif
    workgroupBarrier();
#endif
}

// The table's values for the 4 indices of `w`, one per byte.
fn table_values(w: u32) -> vec4<f32> {
    return vec4<f32>(value_table[w & 0xffu], value_table[(w >> 8u) & 0xffu], value_table[(w >> 16u) & 0xffu], value_table[w >> 24u]);
}
#ifdef Q8_INPUT

// The table's values for the nibbles of the 4 bytes of `w` as signed bytes: those of the low
// nibbles in x, of the high nibbles in y.
fn table_bytes(w: u32) -> vec2<u32> {
#ifdef SHUFFLED_TABLE
    let words = vec4<u32>(w);
    let low = (words >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u);
    let high = (words >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u);
    return vec2<u32>(table_word(low), table_word(high));
#else
    let e = vec4<u32>(pair_table[w & 0xffu], pair_table[(w >> 8u) & 0xffu], pair_table[(w >> 16u) & 0xffu], pair_table[w >> 24u]);
    return vec2<u32>(pack4xU8(e), pack4xU8(e >> vec4<u32>(16u)));
#endif
}
#endif
