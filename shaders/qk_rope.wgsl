// Per-head RMSNorm (QK_NORM, Gemma) and RoPE of one q or k row, shared by the fused q/k step
// (fused_qk_rope_store.wgsl) and decode attention that takes that step over (attention.wgsl,
// ROPE_STORE). The including shader provides q and k (rows of HEAD_DIM), table, q_norm and
// k_norm (QK_NORM), params.rot_dim, params.max_positions and params.eps, NEOX for the pair
// style, and workgroup_reduce.wgsl. The math and its order match the separate rmsnorm and rope
// kernels.

var<workgroup> row: array<f32, HEAD_DIM>;

// Stages q (is_query) or k from element `base` in `row` and returns its norm scale (1 without
// QK_NORM). Every thread calls it; afterwards all of `row` is visible to all of them.
fn load_row(lid: u32, is_query: bool, base: u32) -> f32 {
    var sum = 0.0;
    for (var d = lid; d < HEAD_DIM; d += WG) {
        var x: f32;
        if (is_query) {
            x = q[base + d];
        } else {
            x = k[base + d];
        }
        row[d] = x;
        sum += x * x;
    }
#ifdef QK_NORM
    return inverseSqrt(workgroup_sum(lid, sum) / f32(HEAD_DIM) + params.eps);
#else
    workgroupBarrier();
    return 1.0;
#endif
}

// The first (cos θ, sin θ) of position `pos` in `table` ([max_positions, rot_dim / 2]).
fn rope_base(pos: u32) -> u32 {
    return min(pos, params.max_positions - 1u) * (params.rot_dim / 2u);
}

// Element d of the row after the norm (when QK_NORM), before rotation.
fn normed(d: u32, scale: f32, is_query: bool) -> f32 {
#ifdef QK_NORM
    if (is_query) {
        return row[d] * scale * q_norm[d];
    }
    return row[d] * scale * k_norm[d];
#else
    return row[d];
#endif
}

// Element d of the rotated row: NEOX pairs (i, i + rot_dim/2), else (2i, 2i + 1); elements
// past rot_dim pass through.
fn rotated(d: u32, scale: f32, is_query: bool, cs_base: u32) -> f32 {
    let x = normed(d, scale, is_query);
    if (d >= params.rot_dim) {
        return x;
    }
    let half = params.rot_dim / 2u;
#ifdef NEOX
    if (d < half) {
        let cs = table[cs_base + d];
        return x * cs.x - normed(d + half, scale, is_query) * cs.y;
    }
    let cs = table[cs_base + d - half];
    return normed(d - half, scale, is_query) * cs.y + x * cs.x;
#else
    let cs = table[cs_base + d / 2u];
    if ((d & 1u) == 0u) {
        return x * cs.x - normed(d + 1u, scale, is_query) * cs.y;
    }
    return normed(d - 1u, scale, is_query) * cs.y + x * cs.x;
#endif
}
