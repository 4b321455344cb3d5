// RMSNorm of rows of `dim` values: y = x / sqrt(mean(x²) + eps) · w.
// One workgroup per row; rows are `rows_per_token` per token (1 for the hidden state,
// the head count for Gemma's per-head q/k norms).
//   IN_PLACE: x is normalized where it is (binding 0 read-write, no output binding).
//   ADD_TO_OUTPUT: out += norm(x)·w, fusing Gemma's post-norms with the residual add.
#include "step.wgsl"

struct Params {
    dim: u32,
    rows_per_token: u32,
    eps: f32,
    _pad: u32,
}

#ifdef IN_PLACE
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> params: Params;
#else
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> params: Params;
#endif

#include "workgroup_reduce.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= step.n_tokens * params.rows_per_token) {
        return;
    }
    let base = row * params.dim;
    var sum = 0.0;
    for (var i = lid; i < params.dim; i += WG) {
        let v = x[base + i];
        sum += v * v;
    }
    let scale = inverseSqrt(workgroup_sum(lid, sum) / f32(params.dim) + params.eps);
    for (var i = lid; i < params.dim; i += WG) {
        let y = x[base + i] * scale * w[i];
#ifdef IN_PLACE
        x[base + i] = y;
#else
#ifdef ADD_TO_OUTPUT
        out[base + i] += y;
#else
        out[base + i] = y;
#endif
#endif
    }
}
