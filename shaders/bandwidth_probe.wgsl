// Reads a whole buffer once, as a weight-streaming kernel does: every thread walks it in a
// grid-stride loop of vec4 loads and folds what it read into one word per workgroup, so the
// loads cannot be left out. The profiler's peak bandwidth is this kernel's bytes per ns.

@group(0) @binding(0) var<storage, read> source: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> folded: array<u32>;

var<workgroup> partial: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let threads = nwg.x * WG;
    var acc = 0u;
    for (var i = gid.x; i < arrayLength(&source); i += threads) {
        let v = source[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    partial[lid] = acc;
    workgroupBarrier();
    if (lid == 0u) {
        var all = 0u;
        for (var t = 0u; t < WG; t++) {
            all ^= partial[t];
        }
        folded[wid.x] = all;
    }
}
