// How a sampling kernel reads one slice of SLICE tokens of the vocabulary into shared memory:
// logits sanitized, then the repetition penalty applied to the tokens of the history window
// (as llama.cpp: a positive logit is divided by the penalty, any other multiplied).
// Needs `logits`, `history`, `state`, `step`, `params` and `sizes` bound, and
// sampling_sort.wgsl's shared arrays.

fn sanitized_logit(token: u32) -> f32 {
    let x = logits[token];
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) {
        return LOWEST;
    }
    return clamp(x, LOWEST, -LOWEST);
}

fn penalized(x: f32) -> f32 {
    return clamp(select(x * params.penalty, x / params.penalty, x > 0.0), LOWEST, -LOWEST);
}

// Position i of the slice holds token index·SLICE + i; entries past the vocabulary are
// (LOWEST, NO_TOKEN).
fn load_slice(index: u32) {
    let start = index * SLICE;
    for (var k = 0u; k < SLICE / WG; k++) {
        let i = k * WG + thread;
        let token = start + i;
        if (token < sizes.vocab) {
            slice_value[i] = sanitized_logit(token);
            slice_id[i] = token;
        } else {
            slice_value[i] = LOWEST;
            slice_id[i] = NO_TOKEN;
        }
    }
    workgroupBarrier();
    // The window: the last repeat_last_n tokens of the prompt tail and the generated tokens.
    let seen = state.history_base + step.generated;
    let count = min(params.repeat_last_n, min(seen, sizes.history_capacity));
    let first = seen - count;
    let end = min(start + SLICE, sizes.vocab);
    for (var j = thread; j < count; j += WG) {
        let token = history[(first + j) % sizes.history_capacity];
        if (token >= start && token < end) {
            // A token repeated in the window is written by several threads, all with the
            // same value: the penalty applies once per distinct token.
            slice_value[token - start] = penalized(sanitized_logit(token));
        }
    }
    workgroupBarrier();
}
