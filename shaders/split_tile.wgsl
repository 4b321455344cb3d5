// Which tile of a prefill product and which slice of K a workgroup takes (matmul_tiled.wgsl,
// matmul_half.wgsl): the workgroups walk the tiles of one K split, row tiles fastest, then the
// next split. Needs `params` (max_tokens, row_tiles, splits, split_len, row_len) and the
// including kernel's TILE_TOKENS and TILE_ROWS.
struct SplitTile {
    split: u32,
    row0: u32,
    token0: u32,
    // The step's tokens, clamped to what the buffers hold.
    n_tokens: u32,
    k_first: u32,
    k_end: u32,
}

fn split_tile(wid: vec3<u32>, nwg: vec3<u32>) -> SplitTile {
    let n_tokens = min(step.n_tokens, params.max_tokens);
    let tiles_per_split = params.row_tiles * ((n_tokens + TILE_TOKENS - 1u) / TILE_TOKENS);
    let index = wid.x + wid.y * nwg.x;
    let split = index / tiles_per_split;
    let tile = index % tiles_per_split;
    let k_first = split * params.split_len;
    return SplitTile(
        split,
        (tile % params.row_tiles) * TILE_ROWS,
        (tile / params.row_tiles) * TILE_TOKENS,
        n_tokens,
        k_first,
        min(params.row_len, k_first + params.split_len),
    );
}

// Workgroups past the step's tokens or the last split have nothing to do.
fn split_tile_is_empty(t: SplitTile) -> bool {
    return t.split >= params.splits || t.token0 >= t.n_tokens;
}
