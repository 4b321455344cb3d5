// The parameters every attention kernel takes (`AttentionParams` in kernels/attention.rs).
struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    cache_len: u32,
    window: u32,
    scale: f32,
    // RoPE and q/k norm of ROPE_STORE.
    rot_dim: u32,
    max_positions: u32,
    eps: f32,
}

// The first key position a query at `q_pos` sees.
fn first_key(q_pos: u32) -> u32 {
    if (params.window > 0u && q_pos + 1u > params.window) {
        return q_pos + 1u - params.window;
    }
    return 0u;
}
