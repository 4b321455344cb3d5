// One merge round of the candidate selection (candidate mode only): workgroup g collects the
// entries of input lists FAN_IN·g .. FAN_IN·g + FAN_IN - 1 (at most SLICE), sorts them and keeps
// the CANDIDATES best as output list g. Rounds repeat until one list is left: the
// vocabulary's CANDIDATES best tokens, best first.
#include "sampling_common.wgsl"

struct MergeRound {
    // Lists in the input.
    lists: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> input_lists: array<Candidate>;
@group(0) @binding(1) var<storage, read> input_lengths: array<u32>;
@group(0) @binding(2) var<storage, read_write> output_lists: array<Candidate>;
@group(0) @binding(3) var<storage, read_write> output_lengths: array<u32>;
@group(0) @binding(4) var<uniform> params: SamplingUniform;
@group(0) @binding(5) var<uniform> merge_round: MergeRound;

#include "sampling_sort.wgsl"

const FAN_IN = SLICE / CANDIDATES;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, ids: Invocation) {
    begin(ids);
    let group = wid.x + wid.y * nwg.x;
    if (params.mode != MODE_CANDIDATES || group * FAN_IN >= merge_round.lists) {
        return;
    }
    var total = 0u;
    for (var f = 0u; f < FAN_IN; f++) {
        let list = group * FAN_IN + f;
        if (list < merge_round.lists) {
            let length = min(input_lengths[list], CANDIDATES);
            for (var i = thread; i < length; i += WG) {
                let c = input_lists[list * CANDIDATES + i];
                slice_value[total + i] = c.value;
                slice_id[total + i] = c.id;
            }
            total += length;
        }
    }
    let count = sort_collected(total);
    let kept = min(count, CANDIDATES);
    for (var i = thread; i < kept; i += WG) {
        output_lists[group * CANDIDATES + i] = Candidate(slice_value[i], slice_id[i]);
    }
    if (thread == 0u) {
        output_lengths[group] = kept;
    }
}
