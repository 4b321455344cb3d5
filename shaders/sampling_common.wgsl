// What every sampling kernel shares: the parameter blocks, the candidate record and its
// order, and the invocation ids the reduction and sort helpers use.

// How the token is chosen; `GpuSampler::set_params` picks it from the sampling parameters.
const MODE_GREEDY = 0u;
// Temperature only: a draw from the whole vocabulary.
const MODE_FULL = 1u;
// Top-k / top-p / min-p over the CANDIDATES most likely tokens, then a draw.
const MODE_CANDIDATES = 2u;

// -FLT_MAX: NaN and -inf logits are read as this, so every comparison and exp stays defined.
const LOWEST = -3.4028234663852886e38;
// The id of padding entries past the end of the vocabulary.
const NO_TOKEN = 0xffffffffu;

// Written between steps by `GpuSampler::set_params`.
struct SamplingUniform {
    mode: u32,
    // 0 = off, else at most CANDIDATES.
    top_k: u32,
    // >= 1 = off.
    top_p: f32,
    // ln(min_p): tokens with logit < max + min_p_log are dropped; LOWEST = off.
    min_p_log: f32,
    temperature: f32,
    penalty: f32,
    // 0 = no repetition penalty.
    repeat_last_n: u32,
    seed_lo: u32,
    seed_hi: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Fixed when the sampler's kernels are recorded.
struct SamplerLayout {
    vocab: u32,
    history_capacity: u32,
    stop_count: u32,
    // Slices of SLICE tokens covering the vocabulary: one workgroup of the first pass each.
    slices: u32,
    // How many of its best logits each slice reports in candidate mode, for the threshold.
    tops_per_slice: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// The sampler's own small state, shared between its kernels.
struct SamplerState {
    // History slots holding prompt tokens; generated token g goes to slot (base + g) % capacity.
    history_base: u32,
    // The token the select kernel chose for the finish kernel.
    chosen: u32,
    // How many entries of `kept` the last candidate-mode draw chose among (0 otherwise).
    kept: u32,
    // Candidate mode: at least CANDIDATES tokens have a logit >= threshold, so no token below
    // it can be a candidate (sampling_threshold.wgsl).
    threshold: f32,
}

struct Candidate {
    value: f32,
    id: u32,
}

// What the first pass learns about one slice; sums are relative to the slice's max.
struct Partial {
    max: f32,
    argmax: u32,
    // Σ exp((logit - max) / temperature)
    sum_t: f32,
    // Σ exp(logit - max)
    sum_1: f32,
}

// Higher logits first; among equal logits the lower id, so ties resolve like a stable sort.
fn comes_before(a: Candidate, b: Candidate) -> bool {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
}

struct Invocation {
    @builtin(local_invocation_index) index: u32,
#ifdef SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) subgroup_size: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
}

var<private> invocation: Invocation;
var<private> thread: u32;

// Called first by every entry point, so helpers need not pass the ids around.
fn begin(ids: Invocation) {
    invocation = ids;
    thread = ids.index;
}
