// Rotary position embedding, in place on [n_tokens, n_heads, head_dim]; the position of
// token t is step.pos + t. NEOX rotates the pairs (i, i + rot_dim/2) (Gemma, Qwen);
// otherwise adjacent pairs (2i, 2i+1), which is what GGUF's permuted Llama Q/K expect.
// cos/sin come from a table made on the CPU at load: GPU sin/cos lose accuracy on the
// large angles of late positions.
#include "step.wgsl"

struct Params {
    n_heads: u32,
    head_dim: u32,
    rot_dim: u32,
    max_positions: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
// [max_positions, rot_dim / 2] of (cos θ, sin θ).
@group(0) @binding(1) var<storage, read> table: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let pairs = params.rot_dim / 2u;
    let index = gid.x + gid.y * nwg.x * WG;
    if (index >= step.n_tokens * params.n_heads * pairs) {
        return;
    }
    let i = index % pairs;
    let head_row = index / pairs;
    let token = head_row / params.n_heads;
    let pos = min(step.pos + token, params.max_positions - 1u);
    let cs = table[pos * pairs + i];
    let base = head_row * params.head_dim;
#ifdef NEOX
    let a = base + i;
    let b = base + i + pairs;
#else
    let a = base + 2u * i;
    let b = a + 1u;
#endif
    let x0 = x[a];
    let x1 = x[b];
    x[a] = x0 * cs.x - x1 * cs.y;
    x[b] = x0 * cs.y + x1 * cs.x;
}
