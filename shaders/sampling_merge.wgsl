// One merge round of the candidate selection (candidate mode only): workgroup g sorts input
// entries [g·SLICE, (g+1)·SLICE) and keeps the CANDIDATES best. Rounds repeat until one
// workgroup is left, whose output is the vocabulary's CANDIDATES best tokens, best first.
#include "sampling_common.wgsl"

struct MergeRound {
    // Entries in the input.
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> input: array<Candidate>;
@group(0) @binding(1) var<storage, read_write> output: array<Candidate>;
@group(0) @binding(2) var<uniform> params: SamplingUniform;
@group(0) @binding(3) var<uniform> merge_round: MergeRound;

#include "sampling_sort.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, ids: Invocation) {
    begin(ids);
    let group = wid.x + wid.y * nwg.x;
    if (params.mode != MODE_CANDIDATES || group * SLICE >= merge_round.count) {
        return;
    }
    for (var i = thread; i < SLICE; i += WG) {
        let source = group * SLICE + i;
        if (source < merge_round.count) {
            let c = input[source];
            slice_value[i] = c.value;
            slice_id[i] = c.id;
        } else {
            slice_value[i] = LOWEST;
            slice_id[i] = NO_TOKEN;
        }
    }
    workgroupBarrier();
    sort_slice();
    for (var i = thread; i < CANDIDATES; i += WG) {
        output[group * CANDIDATES + i] = Candidate(slice_value[i], slice_id[i]);
    }
}
