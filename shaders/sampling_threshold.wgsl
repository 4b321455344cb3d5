// Candidate mode, one workgroup: the CANDIDATES-th best of the slices' reported best logits.
// Those are distinct tokens, so at least CANDIDATES tokens have a logit at or above it and no
// token below it can be among the vocabulary's CANDIDATES best; sampling_candidates.wgsl sorts
// only the tokens at or above it. When the slices report fewer logits, the threshold is LOWEST.
// Found with a radix select: four rounds of a 256-bin histogram of 8-bit key digits.
#include "sampling_common.wgsl"

@group(0) @binding(0) var<storage, read> tops: array<f32>;
@group(0) @binding(1) var<storage, read_write> state: SamplerState;
@group(0) @binding(2) var<uniform> params: SamplingUniform;
@group(0) @binding(3) var<uniform> sizes: SamplerLayout;

#include "sampling_reduce.wgsl"

// One bin per thread: WG is 256.
var<workgroup> digit_counts: array<atomic<u32>, 256>;
var<workgroup> chosen_digit: u32;
var<workgroup> remaining_rank: u32;

// An unsigned key with the order of the (non-NaN) floats.
fn order_key(value: f32) -> u32 {
    let bits = bitcast<u32>(value);
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

fn key_value(key: u32) -> f32 {
    return bitcast<f32>(select(~key, key & 0x7fffffffu, (key & 0x80000000u) != 0u));
}

@compute @workgroup_size(WG)
fn main(ids: Invocation) {
    begin(ids);
    let count = sizes.slices * sizes.tops_per_slice;
    if (params.mode != MODE_CANDIDATES) {
        return;
    }
    if (count < CANDIDATES) {
        if (thread == 0u) {
            state.threshold = LOWEST;
        }
        return;
    }
    // The key of rank `rank` (1 = best) among the keys whose settled digits equal `prefix`.
    var prefix = 0u;
    var rank = CANDIDATES;
    for (var round = 0u; round < 4u; round++) {
        let shift = 24u - 8u * round;
        let settled = (0xffffffffu << shift) << 8u;
        atomicStore(&digit_counts[thread], 0u);
        workgroupBarrier();
        for (var i = thread; i < count; i += WG) {
            let key = order_key(tops[i]);
            if ((key & settled) == prefix) {
                atomicAdd(&digit_counts[(key >> shift) & 255u], 1u);
            }
        }
        workgroupBarrier();
        // Thread t counts digit 255 - t, so the scan counts the higher digits first.
        let digit_count = atomicLoad(&digit_counts[255u - thread]);
        let higher = u32(workgroup_exclusive_sum(f32(digit_count)).x);
        if (higher < rank && rank <= higher + digit_count) {
            chosen_digit = 255u - thread;
            remaining_rank = rank - higher;
        }
        prefix |= workgroupUniformLoad(&chosen_digit) << shift;
        rank = workgroupUniformLoad(&remaining_rank);
    }
    if (thread == 0u) {
        state.threshold = key_value(prefix);
    }
}
