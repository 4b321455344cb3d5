// The residual connection and the next RMSNorm in one dispatch, one workgroup per token:
//   hidden += POST_NORM ? rmsnorm(x)·post_w : x   (Gemma's post-norms; plain add for Llama)
//   normed  = rmsnorm(hidden)·next_w               (the next block's pre-norm)
// Rows are read as vec4 by a workgroup of about a thread per vector, so each pass is one
// round of loads: in decode this kernel is a chain of dependent memory latencies, and a loop
// of several rounds per thread multiplied them. Each thread rereads only the hidden values
// it wrote itself, so the passes need no barrier beyond the reductions. Same math and order
// as rmsnorm.wgsl + elementwise add.
// Q8_OUT (decode): the step's first normed row is also written in Q8 form (q8_block.wgsl) for
// the products that read it so.
#include "step.wgsl"

struct Params {
    // Vectors of 4 values per row.
    dim_vec4s: u32,
    eps: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> hidden: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> next_w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> normed: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> params: Params;
#ifdef POST_NORM
@group(0) @binding(6) var<storage, read> post_w: array<vec4<f32>>;
#endif
#ifdef Q8_OUT
@group(0) @binding(7) var<storage, read_write> q8_words: array<u32>;
@group(0) @binding(8) var<storage, read_write> q8_scales: array<f32>;
#include "q8_block.wgsl"
#endif

#include "workgroup_reduce.wgsl"

fn rms_scale(lid: u32, sum_of_squares: f32) -> f32 {
    return inverseSqrt(workgroup_sum(lid, sum_of_squares) / f32(params.dim_vec4s * 4u) + params.eps);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let token = wid.x + wid.y * nwg.x;
    if (token >= step.n_tokens) {
        return;
    }
    let base = token * params.dim_vec4s;
#ifdef POST_NORM
    var x_squares = 0.0;
    for (var i = lid; i < params.dim_vec4s; i += WG) {
        let v = x[base + i];
        x_squares += dot(v, v);
    }
    let post_scale = rms_scale(lid, x_squares);
#endif
    var h_squares = 0.0;
    for (var i = lid; i < params.dim_vec4s; i += WG) {
#ifdef POST_NORM
        let h = hidden[base + i] + x[base + i] * post_scale * post_w[i];
#else
        let h = hidden[base + i] + x[base + i];
#endif
        hidden[base + i] = h;
        h_squares += dot(h, h);
    }
    let scale = rms_scale(lid, h_squares);
#ifdef Q8_OUT
    // Rounds of WG vectors, so the block reductions' barriers are reached by every thread.
    for (var first = 0u; first < params.dim_vec4s; first += WG) {
        let i = first + lid;
        var v = vec4<f32>(0.0);
        if (i < params.dim_vec4s) {
            v = hidden[base + i] * scale * next_w[i];
            normed[base + i] = v;
        }
        let largest = q8_block_largest(lid, v);
        if (i < params.dim_vec4s && token == 0u) {
            q8_store(i, v, largest);
        }
    }
#else
    for (var i = lid; i < params.dim_vec4s; i += WG) {
        normed[base + i] = hidden[base + i] * scale * next_w[i];
    }
#endif
}
