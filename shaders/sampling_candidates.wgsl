// Candidate mode: workgroup w collects the tokens of slice w at or above the threshold
// (usually a handful), sorts them and keeps the CANDIDATES best as list w, for
// sampling_merge.wgsl to combine.
#include "step.wgsl"
#include "sampling_common.wgsl"

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> history: array<u32>;
@group(0) @binding(2) var<storage, read> state: SamplerState;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<storage, read_write> lists: array<Candidate>;
@group(0) @binding(5) var<storage, read_write> list_lengths: array<u32>;
@group(0) @binding(6) var<uniform> params: SamplingUniform;
@group(0) @binding(7) var<uniform> sizes: SamplerLayout;

#include "sampling_reduce.wgsl"
#include "sampling_sort.wgsl"
#include "sampling_slice.wgsl"

const_assert SLICE == 4u * WG;

fn survives(c: Candidate, threshold: f32) -> bool {
    return c.id != NO_TOKEN && c.value >= threshold;
}

// Appends `c` at `at` when it survives: every read of the slice is done before the first call.
fn collect(c: Candidate, threshold: f32, at: ptr<function, u32>) {
    if (survives(c, threshold)) {
        slice_value[*at] = c.value;
        slice_id[*at] = c.id;
        *at += 1u;
    }
}

fn entry(i: u32) -> Candidate {
    return Candidate(slice_value[i], slice_id[i]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, ids: Invocation) {
    begin(ids);
    let slice = wid.x + wid.y * nwg.x;
    if (params.mode != MODE_CANDIDATES || slice >= sizes.slices) {
        return;
    }
    load_slice(slice);
    let threshold = state.threshold;
    // Each thread holds its SLICE / WG = 4 entries in registers while the slice is compacted.
    let c0 = entry(thread);
    let c1 = entry(thread + WG);
    let c2 = entry(thread + 2u * WG);
    let c3 = entry(thread + 3u * WG);
    let survivors = u32(survives(c0, threshold)) + u32(survives(c1, threshold)) + u32(survives(c2, threshold)) + u32(survives(c3, threshold));
    // The scan's barriers also order every read above before the compacting writes below.
    let scan = workgroup_exclusive_sum(f32(survivors));
    var at = u32(scan.x);
    collect(c0, threshold, &at);
    collect(c1, threshold, &at);
    collect(c2, threshold, &at);
    collect(c3, threshold, &at);
    let count = sort_collected(u32(scan.y));
    let kept = min(count, CANDIDATES);
    for (var i = thread; i < kept; i += WG) {
        lists[slice * CANDIDATES + i] = Candidate(slice_value[i], slice_id[i]);
    }
    if (thread == 0u) {
        list_lengths[slice] = kept;
    }
}
