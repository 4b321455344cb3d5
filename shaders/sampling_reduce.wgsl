// Workgroup-wide reductions and scans over the WG threads: subgroup operations plus one
// shared-memory slot per subgroup (SUBGROUPS), or shared-memory trees. Every thread must call
// them, from uniform control flow, and every thread gets the result.

var<workgroup> reduce_value: array<f32, WG>;
var<workgroup> reduce_id: array<u32, WG>;

#ifdef SUBGROUPS
// The best candidate of the workgroup (see comes_before).
fn workgroup_best(c: Candidate) -> Candidate {
    let value = subgroupMax(c.value);
    let id = subgroupMin(select(NO_TOKEN, c.id, c.value == value));
    if (invocation.lane == 0u) {
        reduce_value[invocation.subgroup] = value;
        reduce_id[invocation.subgroup] = id;
    }
    workgroupBarrier();
    var best = Candidate(reduce_value[0], reduce_id[0]);
    for (var s = 1u; s < invocation.subgroups; s++) {
        let other = Candidate(reduce_value[s], reduce_id[s]);
        if (comes_before(other, best)) {
            best = other;
        }
    }
    workgroupBarrier();
    return best;
}

fn workgroup_sum(value: f32) -> f32 {
    let sum = subgroupAdd(value);
    if (invocation.lane == 0u) {
        reduce_value[invocation.subgroup] = sum;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var s = 0u; s < invocation.subgroups; s++) {
        total += reduce_value[s];
    }
    workgroupBarrier();
    return total;
}

// (sum of the values of the threads before this one, sum of all).
fn workgroup_exclusive_sum(value: f32) -> vec2<f32> {
    let before_in_subgroup = subgroupExclusiveAdd(value);
    if (invocation.lane == invocation.subgroup_size - 1u) {
        reduce_value[invocation.subgroup] = before_in_subgroup + value;
    }
    workgroupBarrier();
    var before = before_in_subgroup;
    var total = 0.0;
    for (var s = 0u; s < invocation.subgroups; s++) {
        let subgroup_total = reduce_value[s];
        if (s < invocation.subgroup) {
            before += subgroup_total;
        }
        total += subgroup_total;
    }
    workgroupBarrier();
    return vec2<f32>(before, total);
}
#else
fn workgroup_best(c: Candidate) -> Candidate {
    reduce_value[thread] = c.value;
    reduce_id[thread] = c.id;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (thread < stride) {
            let other = Candidate(reduce_value[thread + stride], reduce_id[thread + stride]);
            if (comes_before(other, Candidate(reduce_value[thread], reduce_id[thread]))) {
                reduce_value[thread] = other.value;
                reduce_id[thread] = other.id;
            }
        }
        workgroupBarrier();
    }
    let best = Candidate(reduce_value[0], reduce_id[0]);
    workgroupBarrier();
    return best;
}

fn workgroup_sum(value: f32) -> f32 {
    reduce_value[thread] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (thread < stride) {
            reduce_value[thread] += reduce_value[thread + stride];
        }
        workgroupBarrier();
    }
    let total = reduce_value[0];
    workgroupBarrier();
    return total;
}

// Hillis-Steele inclusive scan; the exclusive sum is the inclusive one of the thread before.
fn workgroup_exclusive_sum(value: f32) -> vec2<f32> {
    reduce_value[thread] = value;
    workgroupBarrier();
    for (var offset = 1u; offset < WG; offset <<= 1u) {
        var sum = reduce_value[thread];
        if (thread >= offset) {
            sum += reduce_value[thread - offset];
        }
        workgroupBarrier();
        reduce_value[thread] = sum;
        workgroupBarrier();
    }
    var before = 0.0;
    if (thread > 0u) {
        before = reduce_value[thread - 1u];
    }
    let total = reduce_value[WG - 1u];
    workgroupBarrier();
    return vec2<f32>(before, total);
}
#endif
