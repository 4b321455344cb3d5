// The partial sums of a split-K matmul added up: b[i] = Σ_s a[s · slice_stride + i] over
// step.n_tokens rows of row_len values. With VECTORS (row_len and slice_stride multiples of
// four) a thread adds four values with 16-byte loads: the one-value kernel ran the sums of a
// 512-token step at about a third of an H200's bandwidth.
#include "step.wgsl"

struct Params {
    row_len: u32,
    slices: u32,
    slice_stride: u32,
    _pad: u32,
}

#ifdef VECTORS
alias Values = vec4<f32>;
const WIDTH = 4u;
#else
alias Values = f32;
const WIDTH = 1u;
#endif

@group(0) @binding(0) var<storage, read> a: array<Values>;
@group(0) @binding(1) var<storage, read_write> b: array<Values>;
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i < step.n_tokens * params.row_len / WIDTH) {
        var sum = Values(0.0);
        for (var slice = 0u; slice < params.slices; slice++) {
            sum += a[slice * params.slice_stride / WIDTH + i];
        }
        b[i] = sum;
    }
}
