// Decode matrix-vector product y[r] = Σ_k W[r,k]·x[k] over one chunk of a weight matrix kept
// in its GGUF block layout (see quant_formats.wgsl; a TYPE_* define picks the type).
// A workgroup computes ROWS rows: its WG threads stride over the parts of the row's blocks,
// each loading its slice of x once into registers and reusing it for all ROWS rows, so
// neighbouring threads read neighbouring words of every row. Per-thread sums are reduced
// with subgroupAdd and one shared-memory slot per subgroup (SUBGROUPS), or with a
// shared-memory tree.

struct Params {
    // Rows in this chunk.
    rows: u32,
    blocks_per_row: u32,
    row_bytes: u32,
    // Element offset of x in its buffer.
    input_offset: u32,
    // Element of y that receives the chunk's first row.
    output_offset: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> weights: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

#include "quant_formats.wgsl"

// Per-row partial sums: one per subgroup (SUBGROUPS; sized for subgroups of one thread) or
// one per thread.
var<workgroup> partial: array<f32, ROWS * WG>;

fn x4(start: u32) -> vec4<f32> {
    return vec4<f32>(x[start], x[start + 1u], x[start + 2u], x[start + 3u]);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#ifdef SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
) {
    let first_row = (wid.x + wid.y * nwg.x) * ROWS;
    let units = params.blocks_per_row * PARTS;
    var acc: array<f32, ROWS>;
    for (var unit = lid; unit < units; unit += WG) {
        let block = unit / PARTS;
        let part = unit % PARTS;
        let x_base = params.input_offset + block * BLOCK_LEN;
        var xs: array<vec4<f32>, RUNS>;
        for (var run = 0u; run < RUNS; run++) {
            xs[run] = x4(x_base + run_start(part, run));
        }
        for (var r = 0u; r < ROWS; r++) {
            let row = first_row + r;
            if (row < params.rows) {
                let w = dequant_part(row * params.row_bytes + block * BLOCK_BYTES, part);
                var sum = 0.0;
                for (var run = 0u; run < RUNS; run++) {
                    sum += dot(w[run], xs[run]);
                }
                acc[r] += sum;
            }
        }
    }

#ifdef SUBGROUPS
    for (var r = 0u; r < ROWS; r++) {
        let sum = subgroupAdd(acc[r]);
        if (lane == 0u) {
            partial[subgroup * ROWS + r] = sum;
        }
    }
    workgroupBarrier();
    if (lid < ROWS && first_row + lid < params.rows) {
        var total = 0.0;
        for (var s = 0u; s < subgroups; s++) {
            total += partial[s * ROWS + lid];
        }
        y[params.output_offset + first_row + lid] = total;
    }
#else
    for (var r = 0u; r < ROWS; r++) {
        partial[r * WG + lid] = acc[r];
    }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            for (var r = 0u; r < ROWS; r++) {
                partial[r * WG + lid] += partial[r * WG + lid + stride];
            }
        }
        workgroupBarrier();
    }
    if (lid < ROWS && first_row + lid < params.rows) {
        y[params.output_offset + first_row + lid] = partial[lid * WG];
    }
#endif
}
