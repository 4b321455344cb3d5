// Copies this step's keys or values [n_tokens, n_kv_heads·head_dim] into the cache at slot
// (pos + t) mod cache_len; sliding-window layers keep a ring of the window plus one batch.
#include "step.wgsl"

#ifdef F16
alias kv_t = f16;
#else
alias kv_t = f32;
#endif

struct Params {
    row_len: u32,
    cache_len: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> cache: array<kv_t>;
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let index = gid.x + gid.y * nwg.x * WG;
    if (index >= step.n_tokens * params.row_len) {
        return;
    }
    let token = index / params.row_len;
    let slot = (step.pos + token) % params.cache_len;
    cache[slot * params.row_len + index % params.row_len] = kv_t(src[index]);
}
