// Second sampling pass, one workgroup: chooses the step's token from the first pass's results.
//   Greedy: the best of the slice maxima (ties to the lowest id).
//   Full distribution: a slice is drawn with probability proportional to its exp-sum, then a
//   token within it; together an exact draw from softmax(logits / temperature).
//   Candidates: llama.cpp's chain over the sorted CANDIDATES best tokens (top-k, top-p,
//   min-p, temperature), then a draw.
#include "step.wgsl"
#include "sampling_common.wgsl"

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> history: array<u32>;
@group(0) @binding(2) var<storage, read_write> state: SamplerState;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<storage, read> partials: array<Partial>;
// The last merge round's list: the vocabulary's best tokens, best first, and its length.
@group(0) @binding(5) var<storage, read> candidates: array<Candidate>;
@group(0) @binding(6) var<storage, read> candidate_count: array<u32>;
// The tokens a candidate-mode draw chose among, best first, with their probabilities.
@group(0) @binding(7) var<storage, read_write> kept: array<Candidate>;
@group(0) @binding(8) var<uniform> params: SamplingUniform;
@group(0) @binding(9) var<uniform> sizes: SamplerLayout;

#include "sampling_reduce.wgsl"
#include "sampling_sort.wgsl"
#include "sampling_slice.wgsl"
#include "sampling_rng.wgsl"

// Consecutive tokens of a slice that one thread weighs in the full-distribution draw.
const PER_THREAD = SLICE / WG;

var<workgroup> owner: atomic<u32>;
var<workgroup> last_weighted: atomic<u32>;
var<workgroup> picked: u32;
var<workgroup> residual: f32;
var<workgroup> weight_t: array<f32, CANDIDATES>;
var<workgroup> weight_1: array<f32, CANDIDATES>;
var<workgroup> kept_count: u32;
var<workgroup> kept_total: f32;

// The slices whose partials this thread reduces: a contiguous range, so scans keep their order.
fn partial_range() -> vec2<u32> {
    let per_thread = (sizes.slices + WG - 1u) / WG;
    let first = min(thread * per_thread, sizes.slices);
    return vec2<u32>(first, min(first + per_thread, sizes.slices));
}

fn greedy() -> u32 {
    let range = partial_range();
    var best = Candidate(LOWEST, NO_TOKEN);
    for (var i = range.x; i < range.y; i++) {
        let c = Candidate(partials[i].max, partials[i].argmax);
        if (comes_before(c, best)) {
            best = c;
        }
    }
    return workgroup_best(best).id;
}

// The thread whose share [before, before + weight) of a workgroup-wide cumulative sum holds
// `goal`; when rounding left `goal` past every share, the last thread with any weight.
fn owner_of(goal: f32, before: f32, weight: f32) -> u32 {
    if (thread == 0u) {
        atomicStore(&owner, NO_TOKEN);
        atomicStore(&last_weighted, 0u);
    }
    workgroupBarrier();
    if (weight > 0.0) {
        atomicMax(&last_weighted, thread);
        if (goal >= before && goal < before + weight) {
            atomicMin(&owner, thread);
        }
    }
    workgroupBarrier();
    let found = atomicLoad(&owner);
    let fallback = atomicLoad(&last_weighted);
    workgroupBarrier();
    return select(found, fallback, found == NO_TOKEN);
}

// Σ exp((logit - top) / temperature) over slice i.
fn slice_weight(i: u32, top: f32) -> f32 {
    return partials[i].sum_t * exp((partials[i].max - top) / params.temperature);
}

fn draw_full(u: f32) -> u32 {
    let range = partial_range();
    var local_max = LOWEST;
    for (var i = range.x; i < range.y; i++) {
        local_max = max(local_max, partials[i].max);
    }
    let top = workgroup_best(Candidate(local_max, 0u)).value;
    var weight = 0.0;
    for (var i = range.x; i < range.y; i++) {
        weight += slice_weight(i, top);
    }
    let slice_scan = workgroup_exclusive_sum(weight);
    let goal = u * slice_scan.y;
    if (thread == owner_of(goal, slice_scan.x, weight)) {
        var sum = slice_scan.x;
        var slice = range.x;
        // Past every token: the in-slice search falls back to the slice's last weighted token.
        var rest = -LOWEST;
        for (var i = range.x; i < range.y; i++) {
            let w = slice_weight(i, top);
            if (w > 0.0) {
                slice = i;
                if (goal < sum + w) {
                    rest = goal - sum;
                    break;
                }
                sum += w;
            }
        }
        picked = slice;
        residual = rest;
    }
    let slice = workgroupUniformLoad(&picked);
    let rest = workgroupUniformLoad(&residual);

    load_slice(slice);
    var weights: array<f32, PER_THREAD>;
    var weight_sum = 0.0;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = thread * PER_THREAD + k;
        var w = 0.0;
        if (slice_id[i] != NO_TOKEN) {
            w = exp((slice_value[i] - top) / params.temperature);
        }
        weights[k] = w;
        weight_sum += w;
    }
    let token_scan = workgroup_exclusive_sum(weight_sum);
    if (thread == owner_of(rest, token_scan.x, weight_sum)) {
        var sum = token_scan.x;
        var position = thread * PER_THREAD;
        for (var k = 0u; k < PER_THREAD; k++) {
            if (weights[k] > 0.0) {
                position = thread * PER_THREAD + k;
                if (rest < sum + weights[k]) {
                    break;
                }
                sum += weights[k];
            }
        }
        picked = position;
    }
    return slice_id[workgroupUniformLoad(&picked)];
}

fn draw_candidates(u: f32) -> u32 {
    let n = min(candidate_count[0], CANDIDATES);
    let top = candidates[0].value;
    for (var i = thread; i < n; i += WG) {
        let d = candidates[i].value - top;
        weight_1[i] = exp(d);
        weight_t[i] = exp(d / params.temperature);
    }
    // Σ exp(logit - top) over the whole vocabulary: top-p's denominator when top-k is off.
    let range = partial_range();
    var local = 0.0;
    for (var i = range.x; i < range.y; i++) {
        local += partials[i].sum_1 * exp(partials[i].max - top);
    }
    let vocab_sum = workgroup_sum(local);

    // Sequential, in llama.cpp's order, so the cut-offs round as its f32 sums do.
    if (thread == 0u) {
        var count = n;
        var denominator = vocab_sum;
        if (params.top_k > 0u) {
            count = min(params.top_k, n);
            denominator = 0.0;
            for (var i = 0u; i < count; i++) {
                denominator += weight_1[i];
            }
        }
        if (params.top_p < 1.0) {
            var cumulative = 0.0;
            for (var i = 0u; i < count; i++) {
                cumulative += weight_1[i] / denominator;
                if (cumulative >= params.top_p) {
                    count = i + 1u;
                    break;
                }
            }
        }
        if (params.min_p_log > LOWEST) {
            // Sorted, so the survivors are a prefix; the best always survives.
            for (var i = 1u; i < count; i++) {
                if (candidates[i].value < top + params.min_p_log) {
                    count = i;
                    break;
                }
            }
        }
        var total = 0.0;
        for (var i = 0u; i < count; i++) {
            total += weight_t[i];
        }
        let goal = u * total;
        var sum = 0.0;
        var pick = 0u;
        for (var i = 0u; i < count; i++) {
            if (weight_t[i] > 0.0) {
                pick = i;
                if (goal < sum + weight_t[i]) {
                    break;
                }
                sum += weight_t[i];
            }
        }
        picked = pick;
        kept_count = count;
        kept_total = total;
    }
    let pick = workgroupUniformLoad(&picked);
    let count = workgroupUniformLoad(&kept_count);
    let total = workgroupUniformLoad(&kept_total);
    for (var i = thread; i < count; i += WG) {
        kept[i] = Candidate(weight_t[i] / total, candidates[i].id);
    }
    return candidates[pick].id;
}

@compute @workgroup_size(WG)
fn main(ids: Invocation) {
    begin(ids);
    let u = uniform_random(params.seed_lo, params.seed_hi, step.generated);
    var token: u32;
    var kept_tokens = 0u;
    if (params.mode == MODE_GREEDY) {
        token = greedy();
    } else if (params.mode == MODE_FULL) {
        token = draw_full(u);
    } else {
        token = draw_candidates(u);
        kept_tokens = kept_count;
    }
    if (thread == 0u) {
        state.chosen = token;
        state.kept = kept_tokens;
    }
}
