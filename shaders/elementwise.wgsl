// Element-wise steps of a transformer block, over step.n_tokens rows of `row_len` values.
//   gated_activation: a = act(a) · b, the gated FFN (GELU_TANH for Gemma, else SiLU).
//   add: a += b, the residual connection.
//   copy_last_row: b[0..row_len] = a[last token's row], the hidden state the LM head reads.
#include "step.wgsl"

struct Params {
    row_len: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> params: Params;

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

#include "activation.wgsl"

@compute @workgroup_size(WG)
fn gated_activation(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i < step.n_tokens * params.row_len) {
        a[i] = activation(a[i]) * b[i];
    }
}

@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i < step.n_tokens * params.row_len) {
        a[i] += b[i];
    }
}

@compute @workgroup_size(WG)
fn copy_last_row(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i < params.row_len) {
        b[i] = a[(step.n_tokens - 1u) * params.row_len + i];
    }
}
