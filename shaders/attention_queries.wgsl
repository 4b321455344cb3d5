// What the attention kernels that serve several queries per workgroup share (attention.wgsl's
// block_main and split_partial): each query's online-softmax state, the folding of a tile of
// keys into it (thread (group g, column c) accumulates vec4 column c of the tile's keys g,
// g + GROUPS, … for every query), a reduction of one value per query over the workgroup, and
// the sum over the thread groups of each column. The including shader provides attention.wgsl's
// params, caches, tile_probs, NO_SCORE, QUERIES, WG, COLUMNS and GROUPS, and MAX_SUBGROUPS with
// SUBGROUPS, else workgroup_reduce.wgsl.

// Where a thread sits: its index in the workgroup and, with SUBGROUPS, its lane, its subgroup
// and the workgroup's number of subgroups.
struct Thread {
    lid: u32,
    lane: u32,
    subgroup: u32,
    subgroups: u32,
}

#ifdef SUBGROUPS
// Per-subgroup maxima or sums: [query][subgroup].
var<workgroup> subgroup_partials: array<f32, QUERIES * MAX_SUBGROUPS>;
#endif
var<workgroup> group_acc: array<vec4<f32>, WG>;

// The largest (or, with `add`, the total) over the workgroup of each query's value. Every
// thread gets every query's result. With SUBGROUPS: within each subgroup, then over the
// subgroups' slots, one pair of barriers for all the queries.
fn combine_queries(values: array<f32, QUERIES>, add: bool, thread: Thread) -> array<f32, QUERIES> {
    var results: array<f32, QUERIES>;
#ifdef SUBGROUPS
    for (var query = 0u; query < QUERIES; query++) {
        // Both, then a select: subgroup operations stay in uniform control flow.
        let partial = select(subgroupMax(values[query]), subgroupAdd(values[query]), add);
        if (thread.lane == 0u) {
            subgroup_partials[query * MAX_SUBGROUPS + thread.subgroup] = partial;
        }
    }
    workgroupBarrier();
    for (var query = 0u; query < QUERIES; query++) {
        var result = subgroup_partials[query * MAX_SUBGROUPS];
        for (var s = 1u; s < thread.subgroups; s++) {
            let other = subgroup_partials[query * MAX_SUBGROUPS + s];
            result = select(max(result, other), result + other, add);
        }
        results[query] = result;
    }
    workgroupBarrier();
#else
    // A tree per query: only decode's one query per workgroup comes here.
    for (var query = 0u; query < QUERIES; query++) {
        if (add) {
            results[query] = workgroup_sum(thread.lid, values[query]);
        } else {
            results[query] = workgroup_max(thread.lid, values[query]);
        }
    }
#endif
    return results;
}

// Each query's online softmax: its running max, this thread's keys' share of its sum (reduced
// once after the last tile), and this thread's vec4 column of its weighted values, not yet
// divided by the sum.
struct Softmax {
    max: array<f32, QUERIES>,
    sum: array<f32, QUERIES>,
    acc: array<vec4<f32>, QUERIES>,
}

fn no_keys_yet() -> Softmax {
    var state: Softmax;
    for (var query = 0u; query < QUERIES; query++) {
        state.max[query] = NO_SCORE;
    }
    return state;
}

// Folds keys tile .. tile + keys_in_tile of the kv head at kv_base into every query's state,
// `scores` being this thread's key's (NO_SCORE where the thread has none or the query does not
// see it). Every thread calls it.
fn attend_tile(state: ptr<function, Softmax>, scores: array<f32, QUERIES>, thread: Thread, tile: u32, keys_in_tile: u32, kv_stride: u32, kv_base: u32) {
    let tile_max = combine_queries(scores, false, thread);
    for (var query = 0u; query < QUERIES; query++) {
        let new_max = max((*state).max[query], tile_max[query]);
        // Unseen keys weigh nothing, even while a query has seen no key yet.
        let p = select(0.0, exp(scores[query] - new_max), scores[query] > NO_SCORE);
        tile_probs[query * WG + thread.lid] = p;
        let correction = exp((*state).max[query] - new_max);
        (*state).max[query] = new_max;
        (*state).sum[query] = (*state).sum[query] * correction + p;
        (*state).acc[query] *= correction;
    }
    workgroupBarrier();
    let column = thread.lid % COLUMNS;
    let group = thread.lid / COLUMNS;
    // Threads past the last whole group (see GROUPS) add nothing.
    for (var j = group; j < keys_in_tile && group < GROUPS; j += GROUPS) {
        let value = vec4<f32>(v_cache[((tile + j) % params.cache_len) * kv_stride + kv_base + column]);
        for (var query = 0u; query < QUERIES; query++) {
            (*state).acc[query] += tile_probs[query * WG + j] * value;
        }
    }
    workgroupBarrier();
}

// The sum over the thread groups of each column's `value`: thread c < COLUMNS gets column c's,
// the others zero. Every thread calls it.
fn sum_over_groups(lid: u32, value: vec4<f32>) -> vec4<f32> {
    group_acc[lid] = value;
    workgroupBarrier();
    var total = vec4<f32>(0.0);
    if (lid < COLUMNS) {
        for (var g = 0u; g < GROUPS; g++) {
            total += group_acc[g * COLUMNS + lid];
        }
    }
    workgroupBarrier();
    return total;
}
