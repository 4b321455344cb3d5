// Per-head RMSNorm (QK_NORM, Gemma) and RoPE of q and k rows, shared by the fused q/k step
// (fused_qk_rope_store.wgsl) and decode attention that takes that step over
// (attention_decode.wgsl, ROPE_STORE). The including shader provides QK_ROWS (the query rows
// it stages at most, plus one for the key), q and k (rows of HEAD_DIM), table, q_norm and
// k_norm (QK_NORM), params.rot_dim, params.max_positions and params.eps, and NEOX for the
// pair style; WG must be a power of two. The math and its order match the separate rmsnorm
// and rope kernels. QKV_BIAS (prefill, where the products do not add them): the includer binds
// qkv_bias, the q, k and v biases end to end, and has params.n_heads and params.n_kv_heads;
// the staged rows get their biases first, as the projections' outputs would have them.

// The staged rows: query rows 0..KEY_ROW, the key row KEY_ROW (QK_ROWS from the includer),
// and each staged row's norm scale (1 without QK_NORM).
const KEY_ROW = QK_ROWS - 1u;
var<workgroup> rows: array<f32, QK_ROWS * HEAD_DIM>;
var<workgroup> row_scales: array<f32, QK_ROWS>;
#ifdef QK_NORM
var<workgroup> norm_slots: array<f32, QK_ROWS * WG>;
#endif

// Stages `queries` consecutive q rows from element q_base into rows 0.., and with `with_key`
// the k row from k_base into KEY_ROW, all in one round of loads, then their norm scales. Every
// thread calls it with the same arguments; afterwards the rows and scales are visible to all.
fn stage_rows(lid: u32, q_base: u32, k_base: u32, queries: u32, with_key: bool) {
    for (var i = lid; i < queries * HEAD_DIM; i += WG) {
        rows[i] = q[q_base + i] + q_bias(q_base + i);
    }
    if (with_key) {
        for (var d = lid; d < HEAD_DIM; d += WG) {
            rows[KEY_ROW * HEAD_DIM + d] = k[k_base + d] + k_bias(k_base + d);
        }
    }
    workgroupBarrier();
#ifdef QK_NORM
    // Every row's sum of squares in one tree over the workgroup (a row not staged sums to 0,
    // unused).
    for (var row = 0u; row < QK_ROWS; row++) {
        var sum = 0.0;
        if (row < queries || (row == KEY_ROW && with_key)) {
            for (var d = lid; d < HEAD_DIM; d += WG) {
                let x = rows[row * HEAD_DIM + d];
                sum += x * x;
            }
        }
        norm_slots[row * WG + lid] = sum;
    }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            for (var row = 0u; row < QK_ROWS; row++) {
                norm_slots[row * WG + lid] += norm_slots[row * WG + lid + stride];
            }
        }
        workgroupBarrier();
    }
    if (lid < QK_ROWS) {
        row_scales[lid] = inverseSqrt(norm_slots[lid * WG] / f32(HEAD_DIM) + params.eps);
    }
    workgroupBarrier();
#endif
}

// The biases of element i of q and of k (rows of all heads, token after token).
fn q_bias(i: u32) -> f32 {
#ifdef QKV_BIAS
    return qkv_bias[i % (params.n_heads * HEAD_DIM)];
#else
    return 0.0;
#endif
}

fn k_bias(i: u32) -> f32 {
#ifdef QKV_BIAS
    return qkv_bias[params.n_heads * HEAD_DIM + i % (params.n_kv_heads * HEAD_DIM)];
#else
    return 0.0;
#endif
}

// The first (cos θ, sin θ) of position `pos` in `table` ([max_positions, rot_dim / 2]).
fn rope_base(pos: u32) -> u32 {
    return min(pos, params.max_positions - 1u) * (params.rot_dim / 2u);
}

// Element d of staged row `row` after the norm (when QK_NORM), before rotation.
fn normed(row: u32, d: u32) -> f32 {
    let x = rows[row * HEAD_DIM + d];
#ifdef QK_NORM
    if (row == KEY_ROW) {
        return x * row_scales[row] * k_norm[d];
    }
    return x * row_scales[row] * q_norm[d];
#else
    return x;
#endif
}

// Element d of staged row `row` rotated: NEOX pairs (i, i + rot_dim/2), else (2i, 2i + 1);
// elements past rot_dim pass through.
fn rotated(row: u32, d: u32, cs_base: u32) -> f32 {
    let x = normed(row, d);
    if (d >= params.rot_dim) {
        return x;
    }
    let half = params.rot_dim / 2u;
#ifdef NEOX
    if (d < half) {
        let cs = table[cs_base + d];
        return x * cs.x - normed(row, d + half) * cs.y;
    }
    let cs = table[cs_base + d - half];
    return normed(row, d - half) * cs.y + x * cs.x;
#else
    let cs = table[cs_base + d / 2u];
    if ((d & 1u) == 0u) {
        return x * cs.x - normed(row, d + 1u) * cs.y;
    }
    return normed(row, d - 1u) * cs.y + x * cs.x;
#endif
}
