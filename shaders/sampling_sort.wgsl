// The SLICE entries a workgroup holds in shared memory, and their bitonic sort.

var<workgroup> slice_value: array<f32, SLICE>;
var<workgroup> slice_id: array<u32, SLICE>;

// Sorts the slice best first (see comes_before). SLICE is a power of two.
fn sort_slice() {
    for (var size = 2u; size <= SLICE; size <<= 1u) {
        for (var stride = size >> 1u; stride > 0u; stride >>= 1u) {
            for (var pair = thread; pair < SLICE / 2u; pair += WG) {
                let i = 2u * pair - (pair & (stride - 1u));
                let j = i + stride;
                let a = Candidate(slice_value[i], slice_id[i]);
                let b = Candidate(slice_value[j], slice_id[j]);
                // Blocks alternate best-first and worst-first until the last merge.
                let best_first = (i & size) == 0u;
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
}
