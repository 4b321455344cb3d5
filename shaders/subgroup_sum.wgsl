// The sum over a workgroup of WG threads of one value per thread, for every thread, through
// subgroupAdd and one shared-memory slot per subgroup: one barrier where a shared-memory tree
// takes one per halving. Called by every thread from uniform control flow; the trailing
// barrier lets the caller reduce again straight away.
var<workgroup> subgroup_sums: array<f32, WG>;

fn workgroup_sum_by_subgroups(value: f32, lane: u32, subgroup: u32, subgroups: u32) -> f32 {
    let sum = subgroupAdd(value);
    if (lane == 0u) {
        subgroup_sums[subgroup] = sum;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var s = 0u; s < subgroups; s++) {
        total += subgroup_sums[s];
    }
    workgroupBarrier();
    return total;
}
