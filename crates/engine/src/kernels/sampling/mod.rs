//! Token sampling on the GPU: the logits never leave the device, only token ids do.
//!
//! A step's sampler runs these kernels after the LM head:
//! 1. `sampling_slices.wgsl`: one workgroup per slice of 1,024 tokens reads the logits with
//!    the repetition penalty applied and records the slice's max, argmax and exp-sums, and in
//!    candidate mode its few best logits.
//! 2. Candidate mode only: `sampling_threshold.wgsl` picks the 256th best of those reported
//!    logits, a threshold that at least 256 tokens reach; `sampling_candidates.wgsl` sorts each
//!    slice's tokens at or above it (usually a handful) and `sampling_merge.wgsl` merges the
//!    lists, four into one per round, down to the vocabulary's 256 best tokens, sorted. Work
//!    follows the number of tokens near the top, and the result is exact whatever it is.
//! 3. `sampling_select.wgsl`: one workgroup chooses the token — argmax, an exact draw from
//!    the full softmax, or llama.cpp's top-k → top-p → min-p → temperature chain over the
//!    candidates — with a counter-based random number of (seed, step.generated).
//! 4. `sampling_finish.wgsl`: feeds the token to the next step and advances the step.
//!
//! The path is chosen on the GPU from the parameter uniform, so changing parameters never
//! re-records anything; only the candidate kernels (2.) are left out of the steps encoded
//! outside candidate mode, where they would return at once.

mod params;
mod sampler;

pub use params::{SamplingParams, MAX_CANDIDATES};
pub use sampler::{GpuSampler, MAX_HISTORY_CAPACITY, MAX_STOP_TOKENS};
