// Sum and max of one value per thread over a workgroup of WG threads (a power of two), by a
// tree in shared memory. Every thread gets the result; the trailing barrier lets a caller
// reduce again straight away.
var<workgroup> reduce_slots: array<f32, WG>;

fn workgroup_sum(lid: u32, value: f32) -> f32 {
    reduce_slots[lid] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            reduce_slots[lid] += reduce_slots[lid + stride];
        }
        workgroupBarrier();
    }
    let result = reduce_slots[0];
    workgroupBarrier();
    return result;
}

fn workgroup_max(lid: u32, value: f32) -> f32 {
    reduce_slots[lid] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            reduce_slots[lid] = max(reduce_slots[lid], reduce_slots[lid + stride]);
        }
        workgroupBarrier();
    }
    let result = reduce_slots[0];
    workgroupBarrier();
    return result;
}
