// Writing a decode input in Q8 form (read by matmul_vector.wgsl's Q8_INPUT): blocks of 32
// values as signed bytes with one scale each, |v| ≤ 127·scale. Here a thread holds 4 values,
// 8 consecutive threads a block (WG is a multiple of 8). One source for every kernel that
// writes the form, so the standalone quantization and the fused ones agree bit for bit.

var<workgroup> q8_thread_largest: array<f32, WG>;

// The largest magnitude in the block of the 4 values `v` of thread `lid`. Every thread calls
// it (it holds barriers); threads without values pass zeros.
fn q8_block_largest(lid: u32, v: vec4<f32>) -> f32 {
    let a = abs(v);
    q8_thread_largest[lid] = max(max(a.x, a.y), max(a.z, a.w));
    workgroupBarrier();
    let first = lid & ~7u;
    var largest = 0.0;
    for (var j = 0u; j < 8u; j++) {
        largest = max(largest, q8_thread_largest[first + j]);
    }
    workgroupBarrier();
    return largest;
}

// Stores vector `i` of the input (4 values `v` of a block whose largest magnitude is
// `largest`), and the block's scale from its first vector.
fn q8_store(i: u32, v: vec4<f32>, largest: f32) {
    let inverse = select(0.0, 127.0 / largest, largest > 0.0);
    q8_words[i] = pack4xI8(vec4<i32>(round(v * inverse)));
    if ((i & 7u) == 0u) {
        q8_scales[i >> 3u] = largest / 127.0;
    }
}
