// Weight rows as f16 for the tensor-core prefill product (matmul_half.wgsl): out[r, k] =
// W[weight_row0 + r, k] of one chunk of a matrix kept in its GGUF block layout
// (quant_formats.wgsl; a TYPE_* define picks the type), for `rows` rows, row-major, two values
// to a word. Each thread writes 8 consecutive values, one 16-byte store (4 values in an 8-byte
// store were 3-5% slower on the 4-8B shapes' pp512 on an H200; threads of a whole 32- or
// 64-value part, writing 16 bytes at 32-byte steps, 5% slower still). Values beyond f16's
// range are clamped rather than made infinite.
// With `pair_offset` > 0 (a gate and an up matrix stacked, the up rows pair_offset rows after
// the gate rows) the rows come out interleaved 16 at a time for matmul_half.wgsl's GATED: out
// rows 32g .. 32g + 15 are W rows 16g .., out rows 32g + 16 .. the same rows + pair_offset.
// The rows land from out row `out_row0` on (the parts of matmul_half.wgsl's STACKED).
// The matrix's ROW_LEN (values) and ROW_BYTES are defines: a thread's row and column come
// from a division by the values a row, a multiply and shift where it is a constant.
struct Params {
    rows: u32,
    weight_row0: u32,
    pair_offset: u32,
    out_row0: u32,
}

@group(0) @binding(0) var<storage, read> weights: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

#include "quant_formats.wgsl"
#include "half_pack.wgsl"

const VALUES = 8u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    load_value_table(lid);
    const PER_ROW = ROW_LEN / VALUES;
    let index = (wid.x + wid.y * nwg.x) * WG + lid;
    if (index >= params.rows * PER_ROW) {
        return;
    }
    let row = index / PER_ROW;
    var weight_row = params.weight_row0 + row;
    if (params.pair_offset > 0u) {
        weight_row = params.weight_row0 + (row / 32u) * 16u + row % 16u + select(0u, params.pair_offset, (row & 16u) != 0u);
    }
    let k = (index % PER_ROW) * VALUES;
    let block_byte = weight_row * ROW_BYTES + (k / BLOCK_LEN) * BLOCK_BYTES;
    let values = dequant8(block_byte, k % BLOCK_LEN);
    out[params.out_row0 * PER_ROW + index] = vec4<u32>(half_pack(values.low), half_pack(values.high));
}
