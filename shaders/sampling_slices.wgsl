// First sampling pass: workgroup w reads slice w of the vocabulary (SLICE tokens, penalized)
// and records its max, argmax and exp-sums, and in candidate mode its tops_per_slice best
// logits, from which sampling_threshold.wgsl bounds the candidates.
#include "step.wgsl"
#include "sampling_common.wgsl"

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> history: array<u32>;
@group(0) @binding(2) var<storage, read> state: SamplerState;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<storage, read_write> partials: array<Partial>;
@group(0) @binding(5) var<storage, read_write> tops: array<f32>;
@group(0) @binding(6) var<uniform> params: SamplingUniform;
@group(0) @binding(7) var<uniform> sizes: SamplerLayout;

#include "sampling_reduce.wgsl"
#include "sampling_sort.wgsl"
#include "sampling_slice.wgsl"

// The best entry of this thread's share of the slice (positions k·WG + thread), skipping
// those whose bit k is set in `excluded`.
fn thread_best(excluded: u32) -> Candidate {
    var best = Candidate(LOWEST, NO_TOKEN);
    for (var k = 0u; k < SLICE / WG; k++) {
        let i = k * WG + thread;
        let c = Candidate(slice_value[i], slice_id[i]);
        if ((excluded & (1u << k)) == 0u && comes_before(c, best)) {
            best = c;
        }
    }
    return best;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, ids: Invocation) {
    begin(ids);
    let slice = wid.x + wid.y * nwg.x;
    if (slice >= sizes.slices) {
        return;
    }
    load_slice(slice);
    let top = workgroup_best(thread_best(0u));

    var sum_t = 0.0;
    var sum_1 = 0.0;
    if (params.mode != MODE_GREEDY) {
        for (var k = 0u; k < SLICE / WG; k++) {
            let i = k * WG + thread;
            if (slice_id[i] != NO_TOKEN) {
                let d = slice_value[i] - top.value;
                sum_t += exp(d / params.temperature);
                sum_1 += exp(d);
            }
        }
        sum_t = workgroup_sum(sum_t);
        sum_1 = workgroup_sum(sum_1);
    }
    if (thread == 0u) {
        partials[slice] = Partial(top.value, top.id, sum_t, sum_1);
    }

    if (params.mode == MODE_CANDIDATES) {
        // The slice's best logits, one workgroup argmax each; a slice with fewer tokens
        // reports LOWEST for the rest, which only loosens the threshold.
        var excluded = 0u;
        var winner = top;
        for (var r = 0u; r < sizes.tops_per_slice; r++) {
            if (r > 0u) {
                winner = workgroup_best(thread_best(excluded));
            }
            if (thread == 0u) {
                tops[slice * sizes.tops_per_slice + r] = winner.value;
            }
            let position = winner.id - slice * SLICE;
            if (winner.id != NO_TOKEN && position % WG == thread) {
                excluded |= 1u << (position / WG);
            }
        }
    }
}
