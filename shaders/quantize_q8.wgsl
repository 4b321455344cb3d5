// A decode input in Q8 form (q8_block.wgsl), as llama.cpp's q8_1: the decode products of the
// integer types then multiply 4 of their values per instruction (dot4I8Packed) and read a
// quarter of the input's bytes. For inputs no kernel before writes in that form. A thread per
// 4 values.

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> q8_words: array<u32>;
@group(0) @binding(2) var<storage, read_write> q8_scales: array<f32>;

#include "q8_block.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = gid.x;
    var v = vec4<f32>(0.0);
    if (i < VEC4S) {
        v = x[i];
    }
    let largest = q8_block_largest(lid, v);
    if (i < VEC4S) {
        q8_store(i, v, largest);
    }
}
