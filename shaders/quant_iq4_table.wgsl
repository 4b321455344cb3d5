// The non-linear table of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl: -127, -104, -83, -65,
// -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), each entry plus 128 as one byte, four
// to a word, so an entry is a shift away rather than an index into an array that could land
// in slow local memory.
const IQ4_TABLE = vec4<u32>(0x3f2d1801u, 0x766a5d4fu, 0xa6998d81u, 0xf1d9c5b5u);

// Entry `index` (0..16) plus 128.
fn iq4_entry(index: u32) -> u32 {
    let table = IQ4_TABLE;
    return (table[index >> 2u] >> ((index & 3u) * 8u)) & 0xffu;
}

// The table entries for the 4 indices of `w` (one per byte), as floats.
fn iq4_values(w: u32) -> vec4<f32> {
    let entries = iq4_entry(w & 0xffu) | (iq4_entry((w >> 8u) & 0xffu) << 8u) | (iq4_entry((w >> 16u) & 0xffu) << 16u) | (iq4_entry(w >> 24u) << 24u);
    return byte_values(entries, 128.0);
}
