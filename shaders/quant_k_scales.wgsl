// The 6-bit (scale, min) pairs of Q4_K and Q5_K: 8 sub-blocks packed into 12 bytes.
// Sub-block s < 4: scale = bytes[s] & 63, min = bytes[s+4] & 63. Sub-block s >= 4: the low
// 4 bits come from the nibbles of bytes[s+4], the high 2 bits from the top bits of
// bytes[s-4] (scale) and bytes[s] (min).

// (scale, min) of `sub_block` from the 12 bytes at the 4-aligned `scales_byte`.
fn k_scale_min(scales_byte: u32, sub_block: u32) -> vec2<f32> {
    let w = scales_byte >> 2u;
    return k_scale_min_of(vec3<u32>(weights[w], weights[w + 1u], weights[w + 2u]), sub_block);
}

// (scale, min) of `sub_block` from the 12 bytes as words. Branch-free: neighbouring threads
// decode sub-blocks on both sides of 4.
fn k_scale_min_of(words: vec3<u32>, sub_block: u32) -> vec2<f32> {
    let shift = (sub_block & 3u) * 8u;
    let b = (words >> vec3<u32>(shift)) & vec3<u32>(0xffu);
    let first = vec2<u32>(b.x & 63u, b.y & 63u);
    let second = vec2<u32>((b.z & 15u) | ((b.x >> 6u) << 4u), (b.z >> 4u) | ((b.y >> 6u) << 4u));
    return vec2<f32>(select(second, first, sub_block < 4u));
}
