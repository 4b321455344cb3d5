// Per-head RMSNorm (QK_NORM, Gemma) and RoPE of q and k rows, shared by the fused q/k step
// (fused_qk_rope_store.wgsl) and decode attention that takes that step over (attention.wgsl,
// ROPE_STORE). The including shader provides q and k (rows of HEAD_DIM), table, q_norm and
// k_norm (QK_NORM), params.rot_dim, params.max_positions and params.eps, NEOX for the pair
// style, and workgroup_reduce.wgsl. The math and its order match the separate rmsnorm and rope
// kernels.

// The staged q row (elements 0..HEAD_DIM) and k row (HEAD_DIM..2·HEAD_DIM).
var<workgroup> rows: array<f32, 2u * HEAD_DIM>;

// Stages q from element q_base (with_query) and k from k_base (with_key) in `rows` and returns
// their norm scales (1 without QK_NORM, or for a row not staged). Both rows are read in one
// round of loads, so a workgroup that needs both waits for memory once. Every thread calls it
// with the same flags; afterwards the staged rows are visible to all of them.
fn load_rows(lid: u32, q_base: u32, k_base: u32, with_query: bool, with_key: bool) -> vec2<f32> {
    var sums = vec2<f32>(0.0);
    for (var d = lid; d < HEAD_DIM; d += WG) {
        if (with_query) {
            let x = q[q_base + d];
            rows[d] = x;
            sums.x += x * x;
        }
        if (with_key) {
            let x = k[k_base + d];
            rows[HEAD_DIM + d] = x;
            sums.y += x * x;
        }
    }
    var scales = vec2<f32>(1.0);
#ifdef QK_NORM
    // Only the staged rows are reduced: most decode slices stage no key.
    if (with_query) {
        scales.x = inverseSqrt(workgroup_sum(lid, sums.x) / f32(HEAD_DIM) + params.eps);
    }
    if (with_key) {
        scales.y = inverseSqrt(workgroup_sum(lid, sums.y) / f32(HEAD_DIM) + params.eps);
    }
#else
    workgroupBarrier();
#endif
    return scales;
}

// The first (cos θ, sin θ) of position `pos` in `table` ([max_positions, rot_dim / 2]).
fn rope_base(pos: u32) -> u32 {
    return min(pos, params.max_positions - 1u) * (params.rot_dim / 2u);
}

// Element d of the q or k row after the norm (when QK_NORM), before rotation.
fn normed(d: u32, scale: f32, is_query: bool) -> f32 {
#ifdef QK_NORM
    if (is_query) {
        return rows[d] * scale * q_norm[d];
    }
    return rows[HEAD_DIM + d] * scale * k_norm[d];
#else
    return rows[select(HEAD_DIM, 0u, is_query) + d];
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
