// Activation rows as f16 for the tensor-core prefill product (matmul_half.wgsl): out[t] = x[t]
// for the step's tokens, two values to a word. Each thread converts 4 consecutive values.
#include "step.wgsl"
#include "half_pack.wgsl"

struct Params {
    row_len: u32,
    // Tokens x holds: a larger step.n_tokens is clamped to it.
    max_tokens: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let quad = (wid.x + wid.y * nwg.x) * WG + lid;
    if (quad >= min(step.n_tokens, params.max_tokens) * (params.row_len / 4u)) {
        return;
    }
    out[quad] = half_pack(x[quad]);
}
