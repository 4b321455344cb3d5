use bytemuck::{Pod, Zeroable};

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use super::params::{SamplingMode, SamplingParams, MAX_CANDIDATES};
use crate::{
    gpu::{
        grid, Define, DispatchSwitch, Element, GpuContext, GpuError, GpuTensor, OpList, StepBuffer,
        Workgroups,
    },
    kernels::{make_dispatch, KernelError},
};

/// Threads per workgroup of the sampling kernels.
const WORKGROUP_SIZE: u32 = 256;
/// Tokens per workgroup of the first pass, and entries per workgroup of a merge round.
const SLICE: u32 = 1024;
/// Candidate lists a merge round combines into one.
const MERGE_FAN_IN: u32 = SLICE / MAX_CANDIDATES;
/// The most best logits a slice reports for the candidate threshold.
const MAX_TOPS_PER_SLICE: u32 = 16;
/// The largest penalty history and sampled-token ring a sampler accepts (4 MiB each).
pub const MAX_HISTORY_CAPACITY: u32 = 1 << 20;
/// The most stop tokens a sampler accepts.
pub const MAX_STOP_TOKENS: usize = 1024;

const KERNEL: &str = "sampling";

/// `SamplerLayout` of sampling_common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SamplerLayout {
    vocab: u32,
    history_capacity: u32,
    stop_count: u32,
    slices: u32,
    tops_per_slice: u32,
    _pad: [u32; 3],
}

#[cfg(test)]
#[test]
fn sampler_layout_match_wgsl() {
    crate::kernels::wgsl_layout::assert_wgsl_layout!(SamplerLayout, "sampling_common.wgsl", "SamplerLayout", { vocab: u32, history_capacity: u32, stop_count: u32, slices: u32, tops_per_slice: u32 });
}

/// `MergeRound` of sampling_merge.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct MergeRound {
    lists: u32,
    _pad: [u32; 3],
}

#[cfg(test)]
#[test]
fn merge_round_match_wgsl() {
    crate::kernels::wgsl_layout::assert_wgsl_layout!(MergeRound, "sampling_merge.wgsl", "MergeRound", { lists: u32 });
}

/// Byte offsets of `SamplerState` (sampling_common.wgsl) fields.
const STATE_HISTORY_BASE: u64 = 0;
const STATE_KEPT: u64 = 8;

/// A candidate merge round: how many lists it reads, and its uniform.
struct MergeStep {
    lists: u32,
    uniform: wgpu::Buffer,
}

/// Candidate lists of up to MAX_CANDIDATES (logit, id) entries, best first, and their lengths.
struct CandidateLists {
    entries: wgpu::Buffer,
    lengths: wgpu::Buffer,
}

impl CandidateLists {
    fn new(ctx: &GpuContext, label: &str, lists: u32) -> Self {
        Self {
            entries: ctx.zeroed_storage(label, u64::from(lists) * u64::from(MAX_CANDIDATES) * 8),
            lengths: ctx.zeroed_storage(label, u64::from(lists) * 4),
        }
    }
}

/// Turns a row of logits into the next token on the GPU. Every buffer is allocated here, so a
/// step allocates nothing; parameters and history change with queue writes between steps.
pub struct GpuSampler {
    vocab_size: u32,
    history_capacity: u32,
    stop_count: u32,
    slices: u32,
    tops_per_slice: u32,
    params: wgpu::Buffer,
    /// `SamplerState`: history base, chosen token, kept-candidate count, candidate threshold.
    state: wgpu::Buffer,
    /// Ring of the latest tokens (prompt tail, then generated) for the repetition penalty.
    history: wgpu::Buffer,
    /// Ring of the sampled tokens, slot = step.generated % history_capacity.
    sampled: wgpu::Buffer,
    stop_tokens: wgpu::Buffer,
    /// One `Partial` per slice.
    partials: wgpu::Buffer,
    /// The best `tops_per_slice` logits of each slice.
    tops: wgpu::Buffer,
    /// Ping-pong candidate lists: one per slice, then the merge rounds' outputs.
    candidates: [CandidateLists; 2],
    merges: Vec<MergeStep>,
    /// The last candidate-mode draw's candidates and probabilities.
    kept: wgpu::Buffer,
    /// On in candidate mode: the threshold, candidate and merge kernels return at once in the
    /// other modes, so they are not dispatched at all (6 of 9 sampler dispatches per token).
    candidate_kernels: DispatchSwitch,
}

fn invalid(message: String) -> KernelError {
    KernelError::InvalidShape { kernel: KERNEL, message }
}

/// Input list counts of the merge rounds after one list per slice: each round merges every
/// MERGE_FAN_IN lists into one, until one is left.
fn merge_round_lists(slices: u32) -> Vec<u32> {
    let mut rounds = Vec::new();
    let mut lists = slices;
    while lists > 1 {
        rounds.push(lists);
        lists = lists.div_ceil(MERGE_FAN_IN);
    }
    rounds
}

/// How many best logits each slice reports: enough for twice MAX_CANDIDATES in all, so the
/// threshold is usually the exact MAX_CANDIDATES-th best logit. None when the slices cannot
/// report MAX_CANDIDATES: the few slices of a small vocabulary are sorted whole.
fn tops_per_slice(slices: u32) -> u32 {
    if slices * MAX_TOPS_PER_SLICE < MAX_CANDIDATES {
        return 0;
    }
    (2 * MAX_CANDIDATES).div_ceil(slices).clamp(1, MAX_TOPS_PER_SLICE)
}

impl GpuSampler {
    /// A sampler for `vocab_size` logits. `history_capacity` sizes both the penalty history
    /// (so it caps `repeat_last_n`) and the sampled-token ring.
    pub fn new(
        ctx: &GpuContext,
        vocab_size: u32,
        stop_token_ids: &[u32],
        history_capacity: u32,
    ) -> Result<Self, KernelError> {
        if vocab_size == 0 || u64::from(vocab_size) * 4 > ctx.caps.max_storage_binding {
            return Err(invalid(format!(
                "vocabulary of {vocab_size} tokens: must be 1 to {} (the storage binding limit)",
                ctx.caps.max_storage_binding / 4
            )));
        }
        if history_capacity == 0 || history_capacity > MAX_HISTORY_CAPACITY {
            return Err(invalid(format!(
                "history capacity {history_capacity}: must be 1 to {MAX_HISTORY_CAPACITY}"
            )));
        }
        if stop_token_ids.len() > MAX_STOP_TOKENS {
            return Err(invalid(format!("{} stop tokens: at most {MAX_STOP_TOKENS}", stop_token_ids.len())));
        }
        let slices = vocab_size.div_ceil(SLICE);
        let tops_per_slice = tops_per_slice(slices);
        let stop_tokens: &[u32] = if stop_token_ids.is_empty() { &[0] } else { stop_token_ids };
        let initial = SamplingParams::greedy().uniform(vocab_size, history_capacity);
        Ok(Self {
            vocab_size,
            history_capacity,
            stop_count: stop_token_ids.len() as u32,
            slices,
            tops_per_slice,
            params: ctx.uniform_buffer("sampling params", &initial),
            state: ctx.zeroed_storage("sampler state", 16),
            history: ctx.zeroed_storage("sampling history", u64::from(history_capacity) * 4),
            sampled: ctx.zeroed_storage("sampled tokens", u64::from(history_capacity) * 4),
            stop_tokens: ctx.storage_buffer("stop tokens", bytemuck::cast_slice(stop_tokens)),
            partials: ctx.zeroed_storage("sampling partials", u64::from(slices) * 16),
            tops: ctx.zeroed_storage("sampling tops", u64::from(slices) * u64::from(tops_per_slice) * 4),
            candidates: [
                CandidateLists::new(ctx, "sampling candidates a", slices),
                CandidateLists::new(ctx, "sampling candidates b", slices),
            ],
            merges: merge_round_lists(slices)
                .into_iter()
                .map(|lists| MergeStep {
                    lists,
                    uniform: ctx.uniform_buffer("sampling merge round", &MergeRound { lists, _pad: [0; 3] }),
                })
                .collect(),
            kept: ctx.zeroed_storage("kept candidates", u64::from(MAX_CANDIDATES) * 8),
            candidate_kernels: Arc::new(AtomicBool::new(initial.mode == SamplingMode::Candidates as u32)),
        })
    }

    pub fn vocab_size(&self) -> u32 {
        self.vocab_size
    }

    pub fn history_capacity(&self) -> u32 {
        self.history_capacity
    }

    fn defines(ctx: &GpuContext) -> Vec<Define> {
        let mut defines = vec![
            Define::u32("WG", WORKGROUP_SIZE),
            Define::u32("SLICE", SLICE),
            Define::u32("CANDIDATES", MAX_CANDIDATES),
        ];
        if ctx.caps.subgroups {
            defines.push(Define::flag("SUBGROUPS"));
        }
        defines
    }

    /// Records the kernels that turn the first row of `logits` (rows of the vocabulary's
    /// size) into one token id, then the "finish step" kernel: the token goes to the first
    /// row of `next_tokens` (the next step's input), the sampled-token ring and the penalty
    /// history; a stop token sets `step.stopped`; the step advances (`pos += n_tokens;
    /// n_tokens = 1; generated += 1`).
    pub fn record(
        &self,
        ctx: &GpuContext,
        ops: &mut OpList,
        logits: &GpuTensor,
        next_tokens: &GpuTensor,
        step: &StepBuffer,
    ) -> Result<(), KernelError> {
        if logits.width() != self.vocab_size || logits.element() != Element::F32 {
            return Err(invalid(format!(
                "logits {} are not rows of the {} vocabulary logits",
                logits.describe(),
                self.vocab_size
            )));
        }
        if logits.size_bytes() > ctx.caps.max_storage_binding {
            return Err(invalid(format!(
                "logits {} exceed the storage binding limit of {} bytes",
                logits.describe(),
                ctx.caps.max_storage_binding
            )));
        }
        if next_tokens.element() != Element::U32 || next_tokens.is_empty() {
            return Err(invalid(format!("next tokens {} are not u32 token ids", next_tokens.describe())));
        }
        let (logits, next_tokens, step) = (logits.buffer(), next_tokens.buffer(), step.buffer());
        let layout = ctx.uniform_buffer(
            "sampler layout",
            &SamplerLayout {
                vocab: self.vocab_size,
                history_capacity: self.history_capacity,
                stop_count: self.stop_count,
                slices: self.slices,
                tops_per_slice: self.tops_per_slice,
                _pad: [0; 3],
            },
        );
        let defines = Self::defines(ctx);
        let per_slice = || Workgroups::Fixed(grid(self.slices, ctx.caps.max_workgroups_per_dimension));
        let one = || Workgroups::Fixed([1, 1, 1]);
        let dispatch = |label: &str, shader: &str, buffers: &[&wgpu::Buffer], workgroups: Workgroups| {
            make_dispatch(ctx, label, shader, "main", &defines, buffers, workgroups)
        };

        ops.push(dispatch(
            "sampling slices",
            "sampling_slices.wgsl",
            &[logits, &self.history, &self.state, step, &self.partials, &self.tops, &self.params, &layout],
            per_slice(),
        )?);
        let switch = &self.candidate_kernels;
        ops.push(
            dispatch(
                "sampling threshold",
                "sampling_threshold.wgsl",
                &[&self.tops, &self.state, &self.params, &layout],
                one(),
            )?
            .switched_by(switch),
        );
        let first = &self.candidates[0];
        ops.push(
            dispatch(
                "sampling candidates",
                "sampling_candidates.wgsl",
                &[
                    logits,
                    &self.history,
                    &self.state,
                    step,
                    &first.entries,
                    &first.lengths,
                    &self.params,
                    &layout,
                ],
                per_slice(),
            )?
            .switched_by(switch),
        );
        for (round, merge) in self.merges.iter().enumerate() {
            let (input, output) = (&self.candidates[round % 2], &self.candidates[(round + 1) % 2]);
            let groups = merge.lists.div_ceil(MERGE_FAN_IN);
            ops.push(
                dispatch(
                    "sampling merge",
                    "sampling_merge.wgsl",
                    &[
                        &input.entries,
                        &input.lengths,
                        &output.entries,
                        &output.lengths,
                        &self.params,
                        &merge.uniform,
                    ],
                    Workgroups::Fixed(grid(groups, ctx.caps.max_workgroups_per_dimension)),
                )?
                .switched_by(switch),
            );
        }
        let last = &self.candidates[self.merges.len() % 2];
        ops.push(dispatch(
            "sampling select",
            "sampling_select.wgsl",
            &[
                logits,
                &self.history,
                &self.state,
                step,
                &self.partials,
                &last.entries,
                &last.lengths,
                &self.kept,
                &self.params,
                &layout,
            ],
            one(),
        )?);
        ops.push(dispatch(
            "sampling finish",
            "sampling_finish.wgsl",
            &[&self.state, &self.stop_tokens, step, next_tokens, &self.sampled, &self.history, &layout],
            one(),
        )?);
        Ok(())
    }

    /// Sets the parameters of the following steps (a uniform write, ordered before the next submit).
    pub fn set_params(&self, queue: &wgpu::Queue, params: &SamplingParams) {
        let uniform = params.uniform(self.vocab_size, self.history_capacity);
        self.candidate_kernels.store(uniform.mode == SamplingMode::Candidates as u32, Ordering::Relaxed);
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&uniform));
    }

    /// Starts the penalty history with the prompt's last tokens (as llama.cpp, which accepts
    /// the prompt into its penalty window); the generated tokens follow them.
    pub fn reset_history(&self, queue: &wgpu::Queue, prompt_tokens: &[u32]) {
        let tail = &prompt_tokens[prompt_tokens.len().saturating_sub(self.history_capacity as usize)..];
        if !tail.is_empty() {
            queue.write_buffer(&self.history, 0, bytemuck::cast_slice(tail));
        }
        queue.write_buffer(&self.state, STATE_HISTORY_BASE, bytemuck::bytes_of(&(tail.len() as u32)));
    }

    /// Ring of the tokens sampled so far: the token of the step with `step.generated == g` is
    /// at u32 index `g % history_capacity`, so several GPU-resident steps can be read back at once.
    pub fn sampled_tokens_buffer(&self) -> &wgpu::Buffer {
        &self.sampled
    }

    /// The tokens the last step drew among, best first, with their final probabilities (after
    /// top-k, top-p, min-p and temperature). Empty when that step was greedy or sampled the full
    /// distribution. Reads back and waits: for inspection and tests, not for generation.
    pub fn last_candidates(&self, ctx: &GpuContext) -> Result<Vec<(u32, f32)>, GpuError> {
        let state = ctx.read_buffer(&self.state, STATE_KEPT, 4)?;
        let count = u32::from_le_bytes(state[..4].try_into().expect("4 bytes read back")).min(MAX_CANDIDATES);
        if count == 0 {
            return Ok(Vec::new());
        }
        let kept = ctx.read_buffer(&self.kept, 0, u64::from(count) * 8)?;
        Ok(kept
            .chunks_exact(8)
            .map(|c| {
                (
                    u32::from_le_bytes(c[4..8].try_into().unwrap()),
                    f32::from_le_bytes(c[0..4].try_into().unwrap()),
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_rounds_reduce_to_one_list() {
        assert_eq!(merge_round_lists(1), Vec::<u32>::new());
        assert_eq!(merge_round_lists(2), vec![2]);
        assert_eq!(merge_round_lists(5), vec![5, 2]);
        // Gemma's 262,144 tokens.
        assert_eq!(merge_round_lists(256), vec![256, 64, 16, 4]);
    }

    #[test]
    fn slices_report_enough_logits_for_a_threshold() {
        // SmolLM2's 49,152 tokens: 48 slices of 11.
        assert_eq!(tops_per_slice(48), 11);
        assert_eq!(tops_per_slice(256), 2);
        assert_eq!(tops_per_slice(1000), 1);
        assert_eq!(tops_per_slice(16), 16);
        // Below 16 slices there are too few for a threshold: every token is a candidate.
        assert_eq!(tops_per_slice(15), 0);
        assert_eq!(tops_per_slice(1), 0);
    }
}
