use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

use serde::Serialize;

use super::{
    engine::LoadedModel,
    profile_sampling::{ProfileSampler, ProfileSink, StepPhase},
    stop_strings::StopStringFilter,
    CancelToken, GenerateError,
};
use crate::{
    gpu::{KernelProfiler, KernelTiming, OpList},
    kernels::{
        matmul::record_matmul,
        sampling::{GpuSampler, SamplingParams},
    },
    model::ForwardGraph,
    tokenizer::{encode_chat, ChatMessage, StreamDecoder},
};

/// How to generate.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GenerateOptions {
    pub sampling: SamplingParams,
    pub max_tokens: u32,
    /// Generation ends when the text contains one of these; it is not part of the output.
    pub stop: Vec<String>,
    /// Keep generating past end-of-generation tokens (benchmarks).
    #[serde(default)]
    pub ignore_eos: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self { sampling: SamplingParams::default(), max_tokens: 256, stop: Vec::new(), ignore_eos: false }
    }
}

/// One generated token and the text it completes (possibly empty mid-character).
#[derive(Debug, Clone, Serialize)]
pub struct TokenEvent {
    pub token_id: u32,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model produced an end-of-sequence or end-of-turn token.
    Eos,
    MaxTokens,
    StopString,
    Cancelled,
    /// The session's context is full.
    ContextFull,
}

#[derive(Debug, Clone, Serialize)]
pub struct GenerationSummary {
    pub prompt_tokens: usize,
    /// Prompt tokens actually run: the rest were already in the KV cache.
    pub prefilled_tokens: usize,
    pub generated_tokens: usize,
    /// The generated token ids, the end-of-generation token included if one ended it.
    pub tokens: Vec<u32>,
    pub text: String,
    pub stop_reason: StopReason,
    pub time_to_first_token_ms: f64,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    /// CPU time of `decode_ms` spent recording and submitting decode steps: while one batch
    /// is recorded the GPU runs the one before, so decode is CPU-bound when this nears it.
    pub decode_recording_ms: f64,
    /// Queue submits of decode batches (the last ones may have run past the end).
    pub decode_submits: usize,
    /// Decode speed after the first token.
    pub tokens_per_second: f64,
}

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
    /// Created on the first perplexity evaluation.
    row_logits: Option<RowLogits>,
}

/// Decode steps queued in one submit at most (a readback buffer holds one id per step).
const MAX_STEPS_PER_SUBMIT: usize = 64;

/// How long a decode batch should take when its size is not fixed: long enough to hide the
/// per-submit costs, short enough that tokens stream smoothly and a stop is heard at once.
const TARGET_BATCH_TIME: Duration = Duration::from_millis(20);

/// Decode batches queued on the GPU at once: while the CPU waits for one and streams its
/// tokens, the next are already queued, so the GPU never idles while the CPU encodes. Early
/// batches are short (they grow from one step) and encoding a step costs the CPU about a
/// quarter of the GPU's time on it, so more than two keep the GPU fed while they grow. H100,
/// synthetic Gemma 3 tg128, two rounds: 270M 1,054/1,063 tok/s with 2, 1,074/1,070 with 3,
/// 1,086/1,091 with 4; 1B 537/541, 544/543, 544/544. A stop is still heard at the first
/// batch read back; the batches queued after it run out unseen.
const DECODE_BATCHES_IN_FLIGHT: usize = 4;

/// Decode steps submitted together whose sampled tokens are not read back yet.
struct DecodeBatch {
    steps: usize,
    readback: usize,
    submission: wgpu::SubmissionIndex,
    /// The batch is a single step timed for the profile sampler.
    timed: bool,
}

impl Session {
    pub(super) fn new(model: Arc<LoadedModel>) -> Result<Session, GenerateError> {
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
            &|ops: &mut OpList, acts| sampler.record(&ctx, ops, &acts.logits, 0, &acts.tokens, &acts.step),
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
            row_logits: None,
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

    /// From now on times one decode step in `every` and every prefill step, handing each
    /// step's kernel timings to `sink` as they are read back; `false` where the adapter has no
    /// timestamp queries. A timed decode step runs as a batch of its own.
    pub fn sample_profiles(&mut self, every: usize, sink: ProfileSink) -> bool {
        self.profile_sampler = ProfileSampler::new(&self.model.ctx, every, sink);
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

    /// Renders `messages` with the model's chat template and generates the reply.
    pub fn generate_chat(
        &mut self,
        messages: &[ChatMessage],
        options: &GenerateOptions,
        cancel: &CancelToken,
        on_token: &mut dyn FnMut(TokenEvent),
    ) -> Result<GenerationSummary, GenerateError> {
        let prompt = encode_chat(&self.model.tokenizer, &self.model.template, messages)?;
        self.generate(&prompt, options, cancel, on_token)
    }

    /// Continues the cached conversation with `prompt` (reusing the cached prefix it shares)
    /// and generates until a stop condition; tokens stream to `on_token` as they come.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        options: &GenerateOptions,
        cancel: &CancelToken,
        on_token: &mut dyn FnMut(TokenEvent),
    ) -> Result<GenerationSummary, GenerateError> {
        let context = self.graph.context_len as usize;
        if prompt.is_empty() {
            return Err(GenerateError::EmptyPrompt);
        }
        self.model.ctx.check_health()?;
        if prompt.len() >= context {
            return Err(GenerateError::PromptTooLong { prompt_tokens: prompt.len(), context_len: context });
        }
        let started = Instant::now();
        let reused = self.reusable_prefix(prompt);
        self.cached.truncate(reused);
        let fresh = &prompt[reused..];

        let ctx = self.model.ctx.clone();
        self.sampler.set_params(&ctx.queue, &options.sampling);
        self.sampler.reset_history(&ctx.queue, prompt);
        let first = self.prefill(fresh)?;
        let prefill_ms = started.elapsed().as_secs_f64() * 1e3;
        // Sampled tokens not yet handed out; every one but the first was also fed to the GPU.
        let mut sampled = VecDeque::from([first]);

        let mut decoder = StreamDecoder::new(&self.model.tokenizer);
        let mut stops = StopStringFilter::new(&options.stop);
        let end_ids = self.model.tokenizer.end_of_generation_ids().to_vec();
        let mut tokens = Vec::new();
        let mut text = String::new();
        let mut in_flight = VecDeque::new();
        // The input of the next batch to collect, positions fed to the GPU (queued included),
        // and tokens sampled or queued to be (the first included).
        let mut batch_input = first;
        let mut fed = self.cached.len();
        let mut produced = 1;
        // Profiling reads one batch's timestamps at a time.
        let depth = if self.profiler.is_some() { 1 } else { DECODE_BATCHES_IN_FLIGHT };
        // Steps run past a stop overwrite sliding-window ring slots: the rings keep one
        // prefill batch spare, so the queued steps must stay within it.
        let steps_cap = (self.graph.acts.max_tokens as usize / depth).clamp(1, MAX_STEPS_PER_SUBMIT);
        let fixed_steps = self.steps_per_submit;
        // Steps read back so far, to size the next batch from the decode speed seen.
        let mut collected = 0;
        let mut recording = Duration::ZERO;
        let mut submits = 0;
        let decode_started = Instant::now();
        let stop_reason = loop {
            let next = match sampled.pop_front() {
                Some(token) => token,
                None => {
                    while in_flight.len() < depth {
                        let timed = self.profiler.is_none()
                            && self.profile_sampler.as_ref().is_some_and(|s| s.decode_step_due());
                        let wanted = fixed_steps.unwrap_or_else(|| match collected {
                            0 => 1,
                            _ => {
                                (TARGET_BATCH_TIME.as_secs_f64() * collected as f64
                                    / decode_started.elapsed().as_secs_f64())
                                    as usize
                            }
                        });
                        let steps = if timed { 1 } else { wanted }
                            .clamp(1, steps_cap)
                            .min((options.max_tokens as usize).saturating_sub(produced))
                            .min((context - 1).saturating_sub(fed));
                        if steps == 0 {
                            break;
                        }
                        let recording_started = Instant::now();
                        in_flight.push_back(self.submit_decode(steps, timed));
                        recording += recording_started.elapsed();
                        submits += 1;
                        produced += steps;
                        fed += steps;
                    }
                    // Only a full context leaves nothing to queue while a token is still wanted.
                    let Some(batch) = in_flight.pop_front() else { break StopReason::ContextFull };
                    let outputs = self.collect_decode(batch_input, batch)?;
                    collected += outputs.len();
                    batch_input = *outputs.last().expect("a batch has at least one step");
                    sampled.extend(outputs);
                    sampled.pop_front().expect("a batch has at least one step")
                }
            };
            tokens.push(next);
            if !options.ignore_eos && end_ids.contains(&next) {
                break StopReason::Eos;
            }
            let filtered = stops.push(&decoder.push(next));
            if !filtered.text.is_empty() || !filtered.stopped {
                text.push_str(&filtered.text);
                on_token(TokenEvent { token_id: next, text: filtered.text });
            }
            if filtered.stopped {
                break StopReason::StopString;
            }
            if tokens.len() >= options.max_tokens as usize {
                break StopReason::MaxTokens;
            }
            if cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if sampled.is_empty() && in_flight.is_empty() && fed + 1 >= context {
                break StopReason::ContextFull;
            }
        };
        // Tokens decoded ahead of a stop were fed to the GPU but are not part of the
        // conversation; batches still in flight never entered `cached`.
        self.cached.truncate(self.cached.len() - sampled.len());
        if stop_reason != StopReason::StopString {
            let tail = decoder.finish();
            let rest = stops.push(&tail).text + &stops.finish();
            if !rest.is_empty() {
                text.push_str(&rest);
                on_token(TokenEvent { token_id: *tokens.last().unwrap_or(&0), text: rest });
            }
        }
        let decode_ms = decode_started.elapsed().as_secs_f64() * 1e3;
        let decoded_after_first = tokens.len().saturating_sub(1);
        Ok(GenerationSummary {
            prompt_tokens: prompt.len(),
            prefilled_tokens: fresh.len(),
            generated_tokens: tokens.len(),
            tokens,
            text,
            stop_reason,
            time_to_first_token_ms: prefill_ms,
            prefill_ms,
            decode_ms,
            decode_recording_ms: recording.as_secs_f64() * 1e3,
            decode_submits: submits,
            tokens_per_second: if decode_ms > 0.0 {
                decoded_after_first as f64 / (decode_ms / 1e3)
            } else {
                0.0
            },
        })
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
        for (index, chunk) in tokens.chunks(batch).enumerate() {
            sampled = self.run_step(chunk, index == 0)?;
        }
        Ok(sampled)
    }

    /// Queues `steps` decode steps in one submit, continuing from the token the sampler last
    /// put in the GPU's input slot: each step's sampled token is fed to the next on the GPU,
    /// and each is copied out for `collect_decode` to read back once.
    fn submit_decode(&mut self, steps: usize, timed: bool) -> DecodeBatch {
        let ctx = self.model.ctx.clone();
        let steps = steps.min(MAX_STEPS_PER_SUBMIT);
        let sampled =
            self.profile_sampler.as_mut().and_then(|sampler| sampler.for_decode_batch(steps, timed));
        let profiler = self.profiler.as_ref().or(sampled);
        let readback = self.next_readback;
        self.next_readback = (readback + 1) % DECODE_BATCHES_IN_FLIGHT;
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("decode steps") });
        for step in 0..steps {
            self.graph.decode.encode(&mut encoder, 1, profiler);
            encoder.copy_buffer_to_buffer(
                &self.graph.acts.tokens,
                0,
                &self.readbacks[readback],
                step as u64 * 4,
                4,
            );
        }
        let submission = ctx.queue.submit([encoder.finish()]);
        DecodeBatch { steps, readback, submission, timed }
    }

    /// Waits for `batch` (not for batches queued after it) and returns its sampled tokens;
    /// `input`, the token it started from, and all but its last output enter the cache.
    fn collect_decode(&mut self, input: u32, batch: DecodeBatch) -> Result<Vec<u32>, GenerateError> {
        let ctx = self.model.ctx.clone();
        let bytes = ctx.map_and_read_after(
            &self.readbacks[batch.readback],
            batch.steps as u64 * 4,
            Some(batch.submission.clone()),
        )?;
        if let Some(profiler) = &self.profiler {
            self.last_timings = profiler.read(&ctx)?;
        }
        if let (Some(sampler), true) = (self.profile_sampler.as_mut(), batch.timed) {
            sampler.collect(
                &ctx,
                Some(batch.submission),
                (StepPhase::Decode, self.cached.len() as u32, 1),
            )?;
        }
        let outputs: Vec<u32> = bytemuck::cast_slice(&bytes).to_vec();
        self.cached.push(input);
        self.cached.extend_from_slice(&outputs[..batch.steps - 1]);
        Ok(outputs)
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
        queue.write_buffer(&self.graph.acts.tokens, 0, bytemuck::cast_slice(chunk));
        let step = [self.cached.len() as u32, chunk.len() as u32, 0, 0];
        queue.write_buffer(&self.graph.acts.step, 0, bytemuck::cast_slice(&step));
        self.cached.extend_from_slice(chunk);
        self.submit_and_read(chunk.len() as u32, timed)
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
        encoder.copy_buffer_to_buffer(&self.graph.acts.tokens, 0, &self.readbacks[0], 0, 4);
        ctx.queue.submit([encoder.finish()]);
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

    /// Runs `tokens` from an empty cache and returns the logits after the last one.
    /// For tests and evaluation: generation never reads logits back.
    pub fn logits_after(&mut self, tokens: &[u32]) -> Result<Vec<f32>, GenerateError> {
        self.reset();
        self.prefill(tokens)?;
        Ok(self.model.ctx.read_f32(&self.graph.acts.logits, self.model.config.vocab_size as usize)?)
    }

    /// Runs `tokens` from an empty cache and returns, for each position `i >= first_scored`,
    /// the negative log-likelihood of `tokens[i]` given the tokens before it.
    pub fn negative_log_likelihoods(
        &mut self,
        tokens: &[u32],
        first_scored: usize,
    ) -> Result<Vec<f64>, GenerateError> {
        if tokens.len() > self.graph.acts.max_tokens as usize {
            return Err(GenerateError::InvalidRequest(format!(
                "{} tokens exceed one prefill batch of {}",
                tokens.len(),
                self.graph.acts.max_tokens
            )));
        }
        self.reset();
        self.prefill(tokens)?;
        let ctx = self.model.ctx.clone();
        if self.row_logits.is_none() {
            self.row_logits = Some(RowLogits::new(&ctx, &self.model)?);
        }
        let rows = self.row_logits.as_ref().expect("just created");
        let hidden_bytes = u64::from(self.model.config.hidden) * 4;
        let vocab = self.model.config.vocab_size as usize;
        let positions: Vec<usize> = (first_scored.max(1)..tokens.len()).collect();
        let mut nlls = Vec::with_capacity(positions.len());
        for group in positions.chunks(rows.capacity as usize) {
            // Row p - 1 of the final-normed hidden states predicts token p.
            let first_row = group[0] as u64 - 1;
            let mut encoder = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("lm head rows") });
            encoder.copy_buffer_to_buffer(
                &self.graph.acts.normed,
                first_row * hidden_bytes,
                &rows.input,
                0,
                group.len() as u64 * hidden_bytes,
            );
            ctx.queue.write_buffer(&rows.step, 0, bytemuck::cast_slice(&[0u32, group.len() as u32, 0, 0]));
            rows.ops.encode(&mut encoder, group.len() as u32, None);
            ctx.queue.submit([encoder.finish()]);
            let logits = ctx.read_f32(&rows.logits, group.len() * vocab)?;
            for (row, &position) in group.iter().enumerate() {
                nlls.push(negative_log_likelihood(
                    &logits[row * vocab..(row + 1) * vocab],
                    tokens[position] as usize,
                ));
            }
        }
        Ok(nlls)
    }
}

/// The LM head as a batched matmul over several rows at once, for scoring every position of
/// a prefill batch (perplexity) without one pass over the vocabulary per row.
struct RowLogits {
    capacity: u32,
    step: wgpu::Buffer,
    input: wgpu::Buffer,
    logits: wgpu::Buffer,
    ops: OpList,
}

impl RowLogits {
    fn new(ctx: &crate::gpu::GpuContext, model: &LoadedModel) -> Result<RowLogits, GenerateError> {
        let vocab_bytes = u64::from(model.config.vocab_size) * 4;
        let capacity = (ctx.caps.max_storage_binding / vocab_bytes).clamp(1, 32) as u32;
        let step = ctx.zeroed_storage("row logits step", 16);
        let input =
            ctx.zeroed_storage("row logits input", u64::from(capacity) * u64::from(model.config.hidden) * 4);
        let logits = ctx.zeroed_storage("row logits", u64::from(capacity) * vocab_bytes);
        let mut ops = OpList::new();
        record_matmul(
            ctx,
            &mut ops,
            "lm head rows",
            model.weights.lm_head(),
            &input,
            &logits,
            &step,
            capacity,
        )?;
        Ok(RowLogits { capacity, step, input, logits, ops })
    }
}

/// -log softmax(logits)[target], in f64.
fn negative_log_likelihood(logits: &[f32], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    (sum.ln() + max) - logits[target] as f64
}
