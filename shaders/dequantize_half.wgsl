// Weight rows as f16 for the tensor-core prefill product (matmul_half.wgsl): out[r, k] =
// W[weight_row0 + r, k] of one chunk of a matrix kept in its GGUF block layout
// (quant_formats.wgsl; a TYPE_* define picks the type), for `rows` rows, row-major, two values
// to a word. Each thread writes 4 consecutive values. Values beyond f16's range are clamped
// rather than made infinite.
struct Params {
    rows: u32,
    row_len: u32,
    row_bytes: u32,
    weight_row0: u32,
}

@group(0) @binding(0) var<storage, read> weights: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

#include "quant_formats.wgsl"
#include "half_pack.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    load_value_table(lid);
    let quads = params.row_len / 4u;
    let quad = (wid.x + wid.y * nwg.x) * WG + lid;
    if (quad >= params.rows * quads) {
        return;
    }
    let row = quad / quads;
    let k = (quad % quads) * 4u;
    let block_byte = (params.weight_row0 + row) * params.row_bytes + (k / BLOCK_LEN) * BLOCK_BYTES;
    out[quad] = half_pack(dequant4(block_byte, k % BLOCK_LEN));
}
