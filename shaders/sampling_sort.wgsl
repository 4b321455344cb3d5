// The SLICE entries a workgroup holds in shared memory, and their bitonic sort.

var<workgroup> slice_value: array<f32, SLICE>;
var<workgroup> slice_id: array<u32, SLICE>;
// How many entries a workgroup collected, shared so every thread sorts the same prefix.
var<workgroup> collected: u32;

// Sorts the first `count` entries best first (see comes_before), where thread 0's `count` is
// the workgroup's. The prefix is padded with (LOWEST, NO_TOKEN) to a power of two, so a
// nearly empty slice costs a few stages instead of a full sort. Returns `count`.
fn sort_collected(count: u32) -> u32 {
    if (thread == 0u) {
        collected = count;
    }
    let n = workgroupUniformLoad(&collected);
    var size = 1u;
    if (n > 1u) {
        size = 1u << (32u - countLeadingZeros(n - 1u));
    }
    for (var i = n + thread; i < size; i += WG) {
        slice_value[i] = LOWEST;
        slice_id[i] = NO_TOKEN;
    }
    workgroupBarrier();
    for (var block = 2u; block <= size; block <<= 1u) {
        for (var stride = block >> 1u; stride > 0u; stride >>= 1u) {
            for (var pair = thread; pair < size / 2u; pair += WG) {
                let i = 2u * pair - (pair & (stride - 1u));
                let j = i + stride;
                let a = Candidate(slice_value[i], slice_id[i]);
                let b = Candidate(slice_value[j], slice_id[j]);
                // Blocks alternate best-first and worst-first until the last merge.
                let best_first = (i & block) == 0u;
                if (comes_before(b, a) == best_first) {
                    slice_value[i] = b.value;
                    slice_id[i] = b.id;
                    slice_value[j] = a.value;
                    slice_id[j] = a.id;
                }
            }
            workgroupBarrier();
        }
    }
    return n;
}
