// The residual connection and the next RMSNorm in one dispatch, one workgroup per token:
//   hidden += POST_NORM ? rmsnorm(x)·post_w : x   (Gemma's post-norms; plain add for Llama)
//   normed  = rmsnorm(hidden)·next_w               (the next block's pre-norm)
// In decode this kernel is a chain of dependent memory latencies between two products, so
// each thread issues every load it will make (ROUNDS vectors of the row a thread, of x,
// hidden and the norm weights) at once, before the first reduction, and keeps the new hidden
// values in registers; the row's size and epsilon are defines (DIM_VEC4S, EPS), not a
// uniform whose load would come first; the step's token count is read only past token 0,
// which every step has; and with SUBGROUPS the two sums take one barrier each
// (workgroup_total.wgsl), where a shared-memory tree over a thousand threads took ten.
// Q8_OUT (decode): the step's first normed row is also written in Q8 form (q8_block.wgsl) for
// the products that read it so.
#include "step.wgsl"

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> hidden: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> next_w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> normed: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> step: Step;
#ifdef POST_NORM
@group(0) @binding(6) var<storage, read> post_w: array<vec4<f32>>;
#endif
#ifdef Q8_OUT
@group(0) @binding(7) var<storage, read_write> q8_words: array<u32>;
@group(0) @binding(8) var<storage, read_write> q8_scales: array<f32>;
#include "q8_block.wgsl"
#endif

#include "workgroup_total.wgsl"

fn rms_scale(ids: Ids, sum_of_squares: f32) -> f32 {
    return inverseSqrt(workgroup_total(ids, sum_of_squares) / f32(DIM_VEC4S * 4u) + EPS);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#ifdef SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
) {
#ifdef SUBGROUPS
    let ids = Ids(lid, lane, subgroup, subgroups);
#else
    let ids = Ids(lid, 0u, 0u, 1u);
#endif
    let token = wid.x + wid.y * nwg.x;
    // Only a grid folded into two dimensions has workgroups past the step's tokens.
    if (token > 0u && token >= step.n_tokens) {
        return;
    }
    let base = token * DIM_VEC4S;
    var h: array<vec4<f32>, ROUNDS>;
    var xs: array<vec4<f32>, ROUNDS>;
    var w: array<vec4<f32>, ROUNDS>;
#ifdef POST_NORM
    var post: array<vec4<f32>, ROUNDS>;
#endif
    for (var r = 0u; r < ROUNDS; r++) {
        let i = r * WG + lid;
        if (i < DIM_VEC4S) {
            h[r] = hidden[base + i];
            xs[r] = x[base + i];
            w[r] = next_w[i];
#ifdef POST_NORM
            post[r] = post_w[i];
#endif
        }
    }
#ifdef POST_NORM
    var x_squares = 0.0;
    for (var r = 0u; r < ROUNDS; r++) {
        x_squares += dot(xs[r], xs[r]);
    }
    let post_scale = rms_scale(ids, x_squares);
#endif
    var h_squares = 0.0;
    for (var r = 0u; r < ROUNDS; r++) {
        let i = r * WG + lid;
        if (i < DIM_VEC4S) {
#ifdef POST_NORM
            h[r] += xs[r] * post_scale * post[r];
#else
            h[r] += xs[r];
#endif
            hidden[base + i] = h[r];
            h_squares += dot(h[r], h[r]);
        }
    }
    let scale = rms_scale(ids, h_squares);
    for (var r = 0u; r < ROUNDS; r++) {
        let i = r * WG + lid;
        var v = vec4<f32>(0.0);
        if (i < DIM_VEC4S) {
            v = h[r] * scale * w[r];
            normed[base + i] = v;
        }
#ifdef Q8_OUT
        // Every thread reaches the block reduction's barriers.
        let largest = q8_block_largest(lid, v);
        if (i < DIM_VEC4S && token == 0u) {
            q8_store(i, v, largest);
        }
#endif
    }
}
