//! Generation: a prompt in, tokens and text out as they come, until end of turn, a stop
//! string, the token limit, cancellation or a full context.

use serde::Serialize;

use super::{
    decode_scheduler::DecodeScheduler, session::Session, stop_strings::StopStringFilter, CancelToken,
    GenerateError,
};
use crate::{
    kernels::sampling::SamplingParams,
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

impl Session {
    /// Renders `messages` with the model's chat template and generates the reply.
    pub fn generate_chat(
        &mut self,
        messages: &[ChatMessage],
        options: &GenerateOptions,
        cancel: &CancelToken,
        on_token: &mut dyn FnMut(TokenEvent),
    ) -> Result<GenerationSummary, GenerateError> {
        let model = self.model().clone();
        let prompt = encode_chat(&model.tokenizer, &model.template, messages)?;
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
        let context = self.context_len() as usize;
        if prompt.is_empty() {
            return Err(GenerateError::EmptyPrompt);
        }
        let model = self.model().clone();
        model.ctx.check_health()?;
        if prompt.len() >= context {
            return Err(GenerateError::PromptTooLong { prompt_tokens: prompt.len(), context_len: context });
        }
        let started = std::time::Instant::now();
        let (first, prefilled) = self.prefill_prompt(prompt, &options.sampling)?;
        let prefill_ms = started.elapsed().as_secs_f64() * 1e3;

        let mut decoder = StreamDecoder::new(&model.tokenizer);
        let mut stops = StopStringFilter::new(&options.stop);
        let end_ids = model.tokenizer.end_of_generation_ids();
        let mut tokens = Vec::new();
        let mut text = String::new();
        let mut scheduler = DecodeScheduler::new(self, first, options.max_tokens);
        let stop_reason = loop {
            let Some(next) = scheduler.next_token(self)? else { break StopReason::ContextFull };
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
            if scheduler.context_exhausted() {
                break StopReason::ContextFull;
            }
        };
        // Batches still in flight never entered the cache.
        self.forget_last(scheduler.unused_tokens());
        if stop_reason != StopReason::StopString {
            let tail = decoder.finish();
            let rest = stops.push(&tail).text + &stops.finish();
            if !rest.is_empty() {
                text.push_str(&rest);
                on_token(TokenEvent { token_id: *tokens.last().unwrap_or(&0), text: rest });
            }
        }
        let decode_ms = scheduler.elapsed().as_secs_f64() * 1e3;
        let decoded_after_first = tokens.len().saturating_sub(1);
        Ok(GenerationSummary {
            prompt_tokens: prompt.len(),
            prefilled_tokens: prefilled,
            generated_tokens: tokens.len(),
            tokens,
            text,
            stop_reason,
            time_to_first_token_ms: prefill_ms,
            prefill_ms,
            decode_ms,
            decode_recording_ms: scheduler.recording.as_secs_f64() * 1e3,
            decode_submits: scheduler.submits,
            tokens_per_second: if decode_ms > 0.0 {
                decoded_after_first as f64 / (decode_ms / 1e3)
            } else {
                0.0
            },
        })
    }
}
