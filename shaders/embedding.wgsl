// Embedding gather: out[t] = scale · dequantize(table[tokens[t]]) for t < step.n_tokens, from
// one chunk of a table kept in its GGUF block layout (quant_formats.wgsl; a TYPE_* define
// picks the type). Each thread writes 4 consecutive values. Tokens whose row lies in another
// chunk are left to that chunk's dispatch; ids past the end of the table get zeros from the
// last chunk, so a bad id never reads out of bounds or leaves stale values behind.
#include "step.wgsl"

struct Params {
    row_len: u32,
    row_bytes: u32,
    // First table row in this chunk, and how many rows it holds.
    first_row: u32,
    rows: u32,
    total_rows: u32,
    // Non-zero for the chunk holding the table's last rows.
    last_chunk: u32,
    max_tokens: u32,
    scale: f32,
}

@group(0) @binding(0) var<storage, read> weights: array<u32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> params: Params;

#include "quant_formats.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    load_value_table(lid);
    let quads = params.row_len / 4u;
    let groups_per_token = (quads + WG - 1u) / WG;
    let linear = wid.x + wid.y * nwg.x;
    let token = linear / groups_per_token;
    let quad = (linear % groups_per_token) * WG + lid;
    if (token >= min(step.n_tokens, params.max_tokens) || quad >= quads) {
        return;
    }
    let id = tokens[token];
    let in_chunk = id >= params.first_row && id - params.first_row < params.rows;
    let past_table = params.last_chunk != 0u && id >= params.total_rows;
    if (!in_chunk && !past_table) {
        return;
    }
    let k = quad * 4u;
    var v = vec4<f32>(0.0);
    if (in_chunk) {
        let row_byte = (id - params.first_row) * params.row_bytes;
        v = params.scale * dequant4(row_byte + (k / BLOCK_LEN) * BLOCK_BYTES, k % BLOCK_LEN);
    }
    let at = token * params.row_len + k;
    out[at] = v.x;
    out[at + 1u] = v.y;
    out[at + 2u] = v.z;
    out[at + 3u] = v.w;
}
