// Decode matrix-vector product y[r] = Σ_k W[r,k]·x[k] over one chunk of a weight matrix kept
// in its GGUF block layout (see quant_formats.wgsl; a TYPE_* define picks the type).
// A workgroup computes ROWS (1, 2 or 4) rows: its WG threads (a power of two) stride over the
// parts of the rows' blocks, each loading its slice of x once into registers and reusing it
// for all ROWS rows, so neighbouring threads read neighbouring words of every row.
// Per-thread sums are reduced with subgroupAdd and one shared-memory slot per subgroup
// (SUBGROUPS), or with a shared-memory tree.

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
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

#include "quant_formats.wgsl"

// Per-row partial sums (component r for row r): one per subgroup (SUBGROUPS; sized for
// subgroups of one thread) or one per thread.
var<workgroup> partial: array<vec4<f32>, WG>;

// The slice of x a part multiplies; runs start at multiples of 4 and input_offset is one.
fn x_runs(x_base: u32, part: u32) -> Runs {
    return Runs(
        x[(x_base + run_start(part, 0u)) >> 2u],
        x[(x_base + run_start(part, 1u)) >> 2u],
        x[(x_base + run_start(part, 2u)) >> 2u],
        x[(x_base + run_start(part, 3u)) >> 2u],
    );
}

fn row_part_dot(row: u32, block: u32, part: u32, xs: Runs, x_sums: vec4<f32>) -> f32 {
    if (row >= params.rows) {
        return 0.0;
    }
    return part_dot(row * params.row_bytes + block * BLOCK_BYTES, part, xs, x_sums);
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
    // Component r accumulates row first_row + r; ROWS is 1, 2 or 4 and the branches on it
    // are resolved at compile time.
    var acc = vec4<f32>(0.0);
    for (var unit = lid; unit < units; unit += WG) {
        let block = unit / PARTS;
        let part = unit % PARTS;
        let xs = x_runs(params.input_offset + block * BLOCK_LEN, part);
        // Run sums for types with block minimums; unused ones compile away.
        let one = vec4<f32>(1.0);
        let x_sums = vec4<f32>(dot(xs.r0, one), dot(xs.r1, one), dot(xs.r2, one), dot(xs.r3, one));
        acc.x += row_part_dot(first_row, block, part, xs, x_sums);
        if (ROWS > 1u) {
            acc.y += row_part_dot(first_row + 1u, block, part, xs, x_sums);
        }
        if (ROWS > 2u) {
            acc.z += row_part_dot(first_row + 2u, block, part, xs, x_sums);
            acc.w += row_part_dot(first_row + 3u, block, part, xs, x_sums);
        }
    }

#ifdef SUBGROUPS
    let sum = subgroupAdd(acc);
    if (lane == 0u) {
        partial[subgroup] = sum;
    }
    workgroupBarrier();
    if (lid < ROWS && first_row + lid < params.rows) {
        var total = 0.0;
        for (var s = 0u; s < subgroups; s++) {
            total += partial[s][lid];
        }
        y[params.output_offset + first_row + lid] = total;
    }
#else
    partial[lid] = acc;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            partial[lid] += partial[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid < ROWS && first_row + lid < params.rows) {
        y[params.output_offset + first_row + lid] = partial[0][lid];
    }
#endif
}
