//! The decode scheduler: how many decode steps go in one submit and how many submits are
//! queued on the GPU at once, so the GPU never idles while the CPU encodes or streams, yet a
//! stop is heard at the next batch read back.

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use super::{profile_sampling::StepPhase, session::Session, GenerateError};

/// Decode steps queued in one submit at most (a readback buffer holds one id per step).
pub(super) const MAX_STEPS_PER_SUBMIT: usize = 64;

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
pub(super) const DECODE_BATCHES_IN_FLIGHT: usize = 4;

/// Decode steps submitted together whose sampled tokens are not read back yet.
pub(super) struct DecodeBatch {
    steps: usize,
    readback: usize,
    submission: wgpu::SubmissionIndex,
    /// The batch is a single step timed for the profile sampler.
    timed: bool,
}

/// One generation's decode: hands out sampled tokens one at a time while keeping batches of
/// steps queued ahead of them.
pub(super) struct DecodeScheduler {
    /// Sampled tokens not yet handed out; every one but the first was also fed to the GPU.
    sampled: VecDeque<u32>,
    in_flight: VecDeque<DecodeBatch>,
    /// The input of the next batch to collect.
    batch_input: u32,
    /// Positions fed to the GPU, queued steps included.
    fed: usize,
    /// Tokens sampled or queued to be, the first included.
    produced: usize,
    max_tokens: usize,
    context: usize,
    depth: usize,
    steps_cap: usize,
    /// Steps read back so far, to size the next batch from the decode speed seen.
    collected: usize,
    started: Instant,
    /// CPU time spent recording and submitting batches.
    pub recording: Duration,
    pub submits: usize,
}

impl DecodeScheduler {
    /// Starts from `first`, the token prefill sampled, with `session`'s cache holding the prompt.
    pub fn new(session: &Session, first: u32, max_tokens: u32) -> DecodeScheduler {
        // Profiling every step reads one batch's timestamps at a time.
        let depth = if session.profiles_every_step() { 1 } else { DECODE_BATCHES_IN_FLIGHT };
        // Steps run past a stop overwrite sliding-window ring slots: the rings keep one
        // prefill batch spare, so the queued steps must stay within it.
        let steps_cap = (session.max_batch_tokens() / depth).clamp(1, MAX_STEPS_PER_SUBMIT);
        DecodeScheduler {
            sampled: VecDeque::from([first]),
            in_flight: VecDeque::new(),
            batch_input: first,
            fed: session.cached_tokens().len(),
            produced: 1,
            max_tokens: max_tokens as usize,
            context: session.context_len() as usize,
            depth,
            steps_cap,
            collected: 0,
            started: Instant::now(),
            recording: Duration::ZERO,
            submits: 0,
        }
    }

    /// The next sampled token, queueing and collecting batches as needed; `None` once the
    /// context is full.
    pub fn next_token(&mut self, session: &mut Session) -> Result<Option<u32>, GenerateError> {
        if let Some(token) = self.sampled.pop_front() {
            return Ok(Some(token));
        }
        while self.in_flight.len() < self.depth {
            let timed = session.decode_step_due_for_profile();
            let steps = if timed {
                1
            } else {
                session.fixed_steps_per_submit().unwrap_or_else(|| self.sized_batch())
            }
            .clamp(1, self.steps_cap)
            .min(self.max_tokens.saturating_sub(self.produced))
            .min((self.context - 1).saturating_sub(self.fed));
            if steps == 0 {
                break;
            }
            let recording_started = Instant::now();
            self.in_flight.push_back(session.submit_decode(steps, timed));
            self.recording += recording_started.elapsed();
            self.submits += 1;
            self.produced += steps;
            self.fed += steps;
        }
        // Only a full context leaves nothing to queue while a token is still wanted.
        let Some(batch) = self.in_flight.pop_front() else { return Ok(None) };
        let outputs = session.collect_decode(self.batch_input, batch)?;
        self.collected += outputs.len();
        self.batch_input = *outputs.last().expect("a batch has at least one step");
        self.sampled.extend(outputs);
        Ok(self.sampled.pop_front())
    }

    /// Steps for the next batch: one at first, then about `TARGET_BATCH_TIME` at the speed seen.
    fn sized_batch(&self) -> usize {
        match self.collected {
            0 => 1,
            collected => {
                (TARGET_BATCH_TIME.as_secs_f64() * collected as f64 / self.started.elapsed().as_secs_f64())
                    as usize
            }
        }
    }

    /// Whether nothing is left to hand out and the next token would not fit the context.
    pub fn context_exhausted(&self) -> bool {
        self.sampled.is_empty() && self.in_flight.is_empty() && self.fed + 1 >= self.context
    }

    /// Tokens decoded ahead of a stop: fed to the GPU, but not part of the conversation.
    pub fn unused_tokens(&self) -> usize {
        self.sampled.len()
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Session {
    /// Queues `steps` decode steps in one submit, continuing from the token the sampler last
    /// put in the GPU's input slot: each step's sampled token is fed to the next on the GPU,
    /// and each is copied out for `collect_decode` to read back once.
    fn submit_decode(&mut self, steps: usize, timed: bool) -> DecodeBatch {
        let steps = steps.min(MAX_STEPS_PER_SUBMIT);
        let readback = self.next_readback();
        let submission = self.encode_decode_steps(steps, readback, timed);
        DecodeBatch { steps, readback, submission, timed }
    }

    /// Waits for `batch` (not for batches queued after it) and returns its sampled tokens;
    /// `input`, the token it started from, and all but its last output enter the cache.
    fn collect_decode(&mut self, input: u32, batch: DecodeBatch) -> Result<Vec<u32>, GenerateError> {
        let bytes = self.read_decode_tokens(batch.readback, batch.steps, &batch.submission)?;
        if batch.timed {
            let position = self.cached_tokens().len() as u32;
            self.collect_sampled_profile(Some(batch.submission), (StepPhase::Decode, position, 1))?;
        }
        let outputs: Vec<u32> = bytemuck::cast_slice(&bytes).to_vec();
        self.extend_cache(input, &outputs[..batch.steps - 1]);
        Ok(outputs)
    }
}
