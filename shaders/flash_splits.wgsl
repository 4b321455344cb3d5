// How the tensor-core prefill attention (attention_flash.wgsl) shares out a query block's keys
// among workgroups, worked out from the step alone so that the kernel, the merge of its partials
// (attention_decode.wgsl's split_combine with PREFILL) and the dispatch sizes agree. Splits pay
// only where the step's blocks × heads are too few workgroups for the GPU, a short step deep in
// a context: each split starts both of its passes on a load it cannot hide, and its partials go
// through memory to the merge (`KeySplits` in kernels/attention.rs has the measurements).
// Needs step.wgsl, attention_params.wgsl and the kernel's BR (queries a block) and BC (keys a
// tile). The workgroups return on these values, so they must be uniform to naga, which takes any
// function argument and any `&&` for non-uniform: hence no arguments, and first_key spelt out.

// Workgroups each block of the step is dispatched: where the step's blocks × heads are fewer
// than SPLIT_BELOW_WORKGROUPS, about TARGET_WORKGROUPS over them all, at most N_SPLITS
// (`KeySplits::per_block` in kernels/attention.rs mirrors it).
fn work_splits() -> u32 {
    let workgroups = ((step.n_tokens + BR - 1u) / BR) * params.n_heads;
    return select(1u, clamp(TARGET_WORKGROUPS / workgroups, 1u, N_SPLITS), workgroups < SPLIT_BELOW_WORKGROUPS);
}

// Splits every block of the step takes: as many as the step's last block, the one with the most
// key tiles, can give at least MIN_SPLIT_TILES tiles each, at most work_splits(). With one (a
// large step, or a short context) the kernel writes the output itself and the merge has nothing
// to do.
fn step_splits() -> u32 {
    let pos0 = step.pos + ((step.n_tokens - 1u) / BR) * BR;
    let first = select(0u, max(pos0 + 1u, params.window) - params.window, params.window > 0u);
    let tiles = (step.pos + step.n_tokens - (first / BC) * BC + BC - 1u) / BC;
    return clamp((tiles + MIN_SPLIT_TILES - 1u) / MIN_SPLIT_TILES, 1u, work_splits());
}
