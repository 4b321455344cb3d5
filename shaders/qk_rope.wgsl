// Per-head RMSNorm (QK_NORM, Gemma) and RoPE of q and k rows, shared by the fused q/k step
// (fused_qk_rope_store.wgsl) and decode attention that takes that step over (attention.wgsl,
// ROPE_STORE). The including shader provides q and k (rows of HEAD_DIM), QUERIES (the q rows a
// workgroup stages, consecutive heads), table, q_norm and k_norm (QK_NORM), params.rot_dim,
// params.max_positions and params.eps, and NEOX for the pair style; it reduces the rows' sums
// of squares itself. The math and its order match the separate rmsnorm and rope kernels.

// The staged rows of HEAD_DIM values: QUERIES q rows, then the k row.
var<workgroup> rows: array<f32, (QUERIES + 1u) * HEAD_DIM>;
const KEY_ROW = QUERIES;

// A value per staged row: the q rows', then the k row's.
struct PerRow {
    queries: array<f32, QUERIES>,
    key: f32,
}

// Stages the QUERIES q rows from element q_base (with_queries) and the k row from k_base
// (with_key) in `rows` and returns this thread's part of each row's sum of squares (0 for a
// row not staged). Every row is loaded in the same pass, so a workgroup that stages several
// waits for memory about once. Every thread calls it with the same flags; the rows are visible to all of them after
// the caller's next barrier.
fn stage_rows(lid: u32, q_base: u32, k_base: u32, with_queries: bool, with_key: bool) -> PerRow {
    var sums: PerRow;
    for (var d = lid; d < HEAD_DIM; d += WG) {
        if (with_queries) {
            for (var row = 0u; row < QUERIES; row++) {
                let x = q[q_base + row * HEAD_DIM + d];
                rows[row * HEAD_DIM + d] = x;
                sums.queries[row] += x * x;
            }
        }
        if (with_key) {
            let x = k[k_base + d];
            rows[KEY_ROW * HEAD_DIM + d] = x;
            sums.key += x * x;
        }
    }
    return sums;
}

// The norm scale of a row whose squares sum to `sum` over the workgroup.
fn norm_scale(sum: f32) -> f32 {
    return inverseSqrt(sum / f32(HEAD_DIM) + params.eps);
}

// The first (cos θ, sin θ) of position `pos` in `table` ([max_positions, rot_dim / 2]).
fn rope_base(pos: u32) -> u32 {
    return min(pos, params.max_positions - 1u) * (params.rot_dim / 2u);
}

// Element d of staged row `row` after the norm (when QK_NORM), before rotation.
fn normed(row: u32, d: u32, scale: f32) -> f32 {
    let x = rows[row * HEAD_DIM + d];
#ifdef QK_NORM
    if (row == KEY_ROW) {
        return x * scale * k_norm[d];
    }
    return x * scale * q_norm[d];
#else
    return x;
#endif
}

// Element d of staged row `row` rotated: NEOX pairs (i, i + rot_dim/2), else (2i, 2i + 1);
// elements past rot_dim pass through.
fn rotated(row: u32, d: u32, scale: f32, cs_base: u32) -> f32 {
    let x = normed(row, d, scale);
    if (d >= params.rot_dim) {
        return x;
    }
    let half = params.rot_dim / 2u;
#ifdef NEOX
    if (d < half) {
        let cs = table[cs_base + d];
        return x * cs.x - normed(row, d + half, scale) * cs.y;
    }
    let cs = table[cs_base + d - half];
    return normed(row, d - half, scale) * cs.y + x * cs.x;
#else
    let cs = table[cs_base + d / 2u];
    if ((d & 1u) == 0u) {
        return x * cs.x - normed(row, d + 1u, scale) * cs.y;
    }
    return normed(row, d - 1u, scale) * cs.y + x * cs.x;
#endif
}
