//! Token sampling on the GPU: the logits never leave the device, only token ids do.
//!
//! A step's sampler runs four kinds of kernels after the LM head:
//! 1. `sampling_slices.wgsl`: one workgroup per slice of 1,024 tokens reads the logits with
//!    the repetition penalty applied and records the slice's max, argmax and exp-sums, and in
//!    candidate mode its 256 best tokens.
//! 2. `sampling_merge.wgsl` (candidate mode): rounds that merge those lists, four into one,
//!    down to the vocabulary's 256 best tokens, sorted.
//! 3. `sampling_select.wgsl`: one workgroup chooses the token — argmax, an exact draw from
//!    the full softmax, or llama.cpp's top-k → top-p → min-p → temperature chain over the
//!    candidates — with a counter-based random number of (seed, step.generated).
//! 4. `sampling_finish.wgsl`: feeds the token to the next step and advances the step.
//!
//! Every kernel is dispatched every step; the path is chosen on the GPU from the parameter
//! uniform, so changing parameters never re-records anything.

mod params;
mod sampler;

pub use params::{SamplingParams, MAX_CANDIDATES};
pub use sampler::{GpuSampler, MAX_HISTORY_CAPACITY, MAX_STOP_TOKENS};
