//! A session: one conversation's KV cache and its recorded forward passes, and the runner of
//! its steps (prefill batches, decode batches, readbacks, timing). What to run when is the
//! decode scheduler's and the generation's business.

use std::sync::Arc;

use super::{
    decode_scheduler::{DECODE_BATCHES_IN_FLIGHT, MAX_STEPS_PER_SUBMIT},
    profile_sampling::{ProfileCadence, ProfileSampler, ProfileSink, StepPhase},
    GenerateError,
};
use crate::{
    gpu::{KernelProfiler, KernelTiming, OpList},
    kernels::sampling::{GpuSampler, SamplingParams},
    load::LoadedModel,
    model::{Activations, ForwardGraph},
};

/// A conversation with the model: its own KV cache and recorded forward passes.
pub struct Session {
    model: Arc<LoadedModel>,
    graph: ForwardGraph,
    sampler: GpuSampler,
    /// Tokens whose keys and values are in the cache, in position order.
    cached: Vec<u32>,
    /// One per decode batch in flight; the prefill step reads through the first.
    readbacks: [wgpu::Buffer; DECODE_BATCHES_IN_FLIGHT],
    next_readback: usize,
    profiler: Option<KernelProfiler>,
    last_timings: Vec<KernelTiming>,
    /// Live profiles: one decode step in N timed, where `profiler` is not timing them all.
    profile_sampler: Option<ProfileSampler>,
    /// Decode steps per submit when fixed; `None` sizes batches by `TARGET_BATCH_TIME`.
    steps_per_submit: Option<usize>,
}

impl Session {
    pub(crate) fn new(model: Arc<LoadedModel>) -> Result<Session, GenerateError> {
        let ctx = model.ctx.clone();
        let config = &model.config;
        let stop_ids = model.tokenizer.end_of_generation_ids().to_vec();
        let sampler = GpuSampler::new(&ctx, config.vocab_size, &stop_ids, 1024)?;
        let graph = ForwardGraph::new(
            &ctx,
            config,
            &model.weights,
            model.info.context_len,
            model.max_batch,
            &|ops: &mut OpList, acts| sampler.record(&ctx, ops, &acts.logits, &acts.tokens, &acts.step),
        )?;
        let readbacks = std::array::from_fn(|_| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("token readback"),
                size: MAX_STEPS_PER_SUBMIT as u64 * 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        Ok(Session {
            model,
            graph,
            sampler,
            cached: Vec::new(),
            readbacks,
            next_readback: 0,
            profiler: None,
            last_timings: Vec::new(),
            profile_sampler: None,
            steps_per_submit: None,
        })
    }

    pub fn model(&self) -> &Arc<LoadedModel> {
        &self.model
    }

    pub fn context_len(&self) -> u32 {
        self.graph.context_len
    }

    /// Tokens currently held in the KV cache.
    pub fn cached_tokens(&self) -> &[u32] {
        &self.cached
    }

    /// Forgets the conversation; the next generation starts from an empty cache.
    pub fn reset(&mut self) {
        self.cached.clear();
    }

    /// Times every kernel of every step from now on (where the adapter has timestamps).
    pub fn set_profiling(&mut self, enabled: bool) {
        self.profiler = if enabled { KernelProfiler::new(&self.model.ctx) } else { None };
    }

    /// From now on times the prefill and decode steps `cadence` picks, handing each step's
    /// kernel timings to `sink` as they are read back; `false` where the adapter has no
    /// timestamp queries. A timed decode step runs as a batch of its own.
    pub fn sample_profiles(&mut self, cadence: ProfileCadence, sink: ProfileSink) -> bool {
        self.profile_sampler = ProfileSampler::new(&self.model.ctx, cadence, sink);
        self.profile_sampler.is_some()
    }

    pub fn stop_sampling_profiles(&mut self) {
        self.profile_sampler = None;
    }

    /// Per-kernel GPU times of the last step, when profiling.
    pub fn last_step_timings(&self) -> &[KernelTiming] {
        &self.last_timings
    }

    /// GPU memory held by this session (activations and KV cache).
    pub fn gpu_bytes(&self) -> u64 {
        self.graph.size_bytes()
    }

    /// How much of the cache can serve `prompt`: the shared prefix, as long as rewinding to it
    /// keeps every sliding-window ring intact, and never the whole prompt (its last token must
    /// run to produce logits).
    fn reusable_prefix(&self, prompt: &[u32]) -> usize {
        let common = self.cached.iter().zip(prompt).take_while(|(a, b)| a == b).count().min(prompt.len() - 1);
        let rewind = self.cached.len() - common;
        let smallest_ring =
            self.graph.caches.iter().map(|c| c.cache_len as usize).min().unwrap_or(usize::MAX);
        let ring_intact = self.cached.len() <= smallest_ring || rewind <= self.graph.acts.max_tokens as usize;
        if ring_intact {
            common
        } else {
            0
        }
    }

    /// Runs `tokens` through the model in batches and returns the token sampled after them.
    fn prefill(&mut self, tokens: &[u32]) -> Result<u32, GenerateError> {
        let batch = self.graph.acts.max_tokens as usize;
        let mut sampled = 0;
        // Live profiles time the prompt's first step only: timestamps between its dispatches
        // keep the GPU from overlapping them.
        let time_first = self.profile_sampler.as_ref().is_some_and(ProfileSampler::prefill_due);
        for (index, chunk) in tokens.chunks(batch).enumerate() {
            sampled = self.run_step(chunk, index == 0 && time_first)?;
        }
        Ok(sampled)
    }

    /// Fixes how many decode steps go in one submit (1 = read every token back before the
    /// next step). By default batches grow from one step until one takes about
    /// `TARGET_BATCH_TIME`: a fast GPU gets long GPU-resident runs, a slow one still streams.
    pub fn set_steps_per_submit(&mut self, steps: usize) {
        self.steps_per_submit = Some(steps.clamp(1, MAX_STEPS_PER_SUBMIT));
    }

    /// Writes a prefill batch and its step header, runs it (`timed` for the live profile), and
    /// returns the sampled token.
    fn run_step(&mut self, chunk: &[u32], timed: bool) -> Result<u32, GenerateError> {
        let queue = &self.model.ctx.queue;
        queue.write_buffer(self.graph.acts.tokens.buffer(), 0, bytemuck::cast_slice(chunk));
        self.graph.acts.step.write(queue, self.cached.len() as u32, chunk.len() as u32);
        self.cached.extend_from_slice(chunk);
        let sampled = self.submit_and_read(chunk.len() as u32, timed);
        if sampled.is_err() {
            // The step may not have written these positions: the next prompt runs them again.
            self.cached.truncate(self.cached.len() - chunk.len());
        }
        sampled
    }

    fn submit_and_read(&mut self, n_tokens: u32, timed: bool) -> Result<u32, GenerateError> {
        let ctx = self.model.ctx.clone();
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("prefill step") });
        let sampled = match (&self.profiler, self.profile_sampler.as_mut()) {
            (None, Some(sampler)) if timed => Some(sampler.for_prefill()),
            _ => None,
        };
        self.graph.prefill.encode(&mut encoder, n_tokens, self.profiler.as_ref().or(sampled));
        encoder.copy_buffer_to_buffer(self.graph.acts.tokens.buffer(), 0, &self.readbacks[0], 0, 4);
        ctx.submit("prefill step", encoder);
        let bytes = ctx.map_and_read(&self.readbacks[0], 4)?;
        if let Some(profiler) = &self.profiler {
            self.last_timings = profiler.read(&ctx)?;
        } else if let (Some(sampler), true) = (self.profile_sampler.as_mut(), timed) {
            let position = self.cached.len() as u32 - n_tokens;
            sampler.collect(&ctx, None, (StepPhase::Prefill, position, n_tokens))?;
        }
        Ok(u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes read back")))
    }

    /// Runs `tokens` from an empty cache as prefill and returns the token sampled after them
    /// (benchmarks time exactly this).
    pub fn prefill_from_empty(
        &mut self,
        tokens: &[u32],
        sampling: &SamplingParams,
    ) -> Result<u32, GenerateError> {
        if tokens.is_empty() || tokens.len() >= self.graph.context_len as usize {
            return Err(GenerateError::PromptTooLong {
                prompt_tokens: tokens.len(),
                context_len: self.graph.context_len as usize,
            });
        }
        self.reset();
        self.sampler.set_params(&self.model.ctx.queue, sampling);
        self.sampler.reset_history(&self.model.ctx.queue, tokens);
        self.prefill(tokens)
    }

    /// Runs `tokens` as prefill after the cached ones and returns the token sampled after them
    /// (benchmarks at depth time exactly this, after `prefill_from_empty` filled the cache).
    pub fn prefill_after_cached(
        &mut self,
        tokens: &[u32],
        sampling: &SamplingParams,
    ) -> Result<u32, GenerateError> {
        let total = self.cached.len() + tokens.len();
        if tokens.is_empty() || total >= self.graph.context_len as usize {
            return Err(GenerateError::PromptTooLong {
                prompt_tokens: total,
                context_len: self.graph.context_len as usize,
            });
        }
        self.sampler.set_params(&self.model.ctx.queue, sampling);
        self.prefill(tokens)
    }

    /// Rewinds the cache to the longest prefix of `prompt` it can reuse, runs the rest as
    /// prefill and returns the token sampled after it and how many prompt tokens ran.
    pub(super) fn prefill_prompt(
        &mut self,
        prompt: &[u32],
        sampling: &SamplingParams,
    ) -> Result<(u32, usize), GenerateError> {
        let reused = self.reusable_prefix(prompt);
        self.cached.truncate(reused);
        let queue = &self.model.ctx.queue;
        self.sampler.set_params(queue, sampling);
        self.sampler.reset_history(queue, prompt);
        let first = self.prefill(&prompt[reused..])?;
        Ok((first, prompt.len() - reused))
    }

    /// Runs `tokens` from an empty cache and leaves the step's activations for reading.
    pub(crate) fn prefill_fresh(&mut self, tokens: &[u32]) -> Result<(), GenerateError> {
        self.reset();
        self.prefill(tokens)?;
        Ok(())
    }

    pub(crate) fn activations(&self) -> &Activations {
        &self.graph.acts
    }

    /// Drops the last `tokens` of the cache: decoded ahead of a stop, they are not part of the
    /// conversation.
    pub(super) fn forget_last(&mut self, tokens: usize) {
        self.cached.truncate(self.cached.len() - tokens);
    }

    /// `input` and `outputs` enter the cache after a decode batch.
    pub(super) fn extend_cache(&mut self, input: u32, outputs: &[u32]) {
        self.cached.push(input);
        self.cached.extend_from_slice(outputs);
    }

    /// Whether every step is timed, which allows one decode batch in flight at a time.
    pub(super) fn profiles_every_step(&self) -> bool {
        self.profiler.is_some()
    }

    /// Tokens one prefill batch holds.
    pub(super) fn max_batch_tokens(&self) -> usize {
        self.graph.acts.max_tokens as usize
    }

    pub(super) fn fixed_steps_per_submit(&self) -> Option<usize> {
        self.steps_per_submit
    }

    /// Whether the live profile wants the next decode step timed (as a batch of its own).
    pub(super) fn decode_step_due_for_profile(&self) -> bool {
        self.profiler.is_none() && self.profile_sampler.as_ref().is_some_and(|s| s.decode_step_due())
    }

    /// The readback buffer for the next decode batch, in turn.
    pub(super) fn next_readback(&mut self) -> usize {
        let readback = self.next_readback;
        self.next_readback = (readback + 1) % DECODE_BATCHES_IN_FLIGHT;
        readback
    }

    /// Encodes and submits `steps` decode steps, each copying its sampled token into slot
    /// `step` of readback buffer `readback`.
    pub(super) fn encode_decode_steps(
        &mut self,
        steps: usize,
        readback: usize,
        timed: bool,
    ) -> wgpu::SubmissionIndex {
        let ctx = self.model.ctx.clone();
        let sampled =
            self.profile_sampler.as_mut().and_then(|sampler| sampler.for_decode_batch(steps, timed));
        let profiler = self.profiler.as_ref().or(sampled);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("decode steps") });
        for step in 0..steps {
            self.graph.decode.encode(&mut encoder, 1, profiler);
            encoder.copy_buffer_to_buffer(
                self.graph.acts.tokens.buffer(),
                0,
                &self.readbacks[readback],
                step as u64 * 4,
                4,
            );
        }
        ctx.submit("decode steps", encoder)
    }

    /// Waits for `submission` and reads the tokens of its `steps` steps from `readback` (and
    /// every kernel's time, when profiling every step).
    pub(super) fn read_decode_tokens(
        &mut self,
        readback: usize,
        steps: usize,
        submission: &wgpu::SubmissionIndex,
    ) -> Result<Vec<u8>, GenerateError> {
        let ctx = self.model.ctx.clone();
        let bytes =
            ctx.map_and_read_after(&self.readbacks[readback], steps as u64 * 4, Some(submission.clone()))?;
        if let Some(profiler) = &self.profiler {
            self.last_timings = profiler.read(&ctx)?;
        }
        Ok(bytes)
    }

    /// Hands a timed step's kernel times to the live profile's sink.
    pub(super) fn collect_sampled_profile(
        &mut self,
        submission: Option<wgpu::SubmissionIndex>,
        step: (StepPhase, u32, u32),
    ) -> Result<(), GenerateError> {
        if let Some(sampler) = self.profile_sampler.as_mut() {
            sampler.collect(&self.model.ctx, submission, step)?;
        }
        Ok(())
    }
}
