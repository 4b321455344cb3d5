// The sum over a workgroup of WG threads of one value per thread, for every thread: with
// SUBGROUPS through subgroupAdd and one shared-memory slot per subgroup, one barrier where the
// shared-memory tree of workgroup_reduce.wgsl (WG a power of two) takes one per halving. Called
// by every thread from uniform control flow; the trailing barrier lets the caller reduce again
// straight away.

// A thread's place in its workgroup (subgroup fields unused without SUBGROUPS).
struct Ids {
    lid: u32,
    lane: u32,
    subgroup: u32,
    subgroups: u32,
}

#ifdef SUBGROUPS
var<workgroup> subgroup_sums: array<f32, WG>;

fn workgroup_total(ids: Ids, value: f32) -> f32 {
    let sum = subgroupAdd(value);
    if (ids.lane == 0u) {
        subgroup_sums[ids.subgroup] = sum;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var s = 0u; s < ids.subgroups; s++) {
        total += subgroup_sums[s];
    }
    workgroupBarrier();
    return total;
}
#else
#include "workgroup_reduce.wgsl"

fn workgroup_total(ids: Ids, value: f32) -> f32 {
    return workgroup_sum(ids.lid, value);
}
#endif
