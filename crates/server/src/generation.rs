//! One generation on the runtime's worker, seen from async code: its events arrive on a
//! channel, and dropping the handle (the client went away) cancels it.

use std::{sync::Arc, time::Instant};

use doppler_engine::{GenerateError, GenerationSummary, StopReason};
use doppler_runtime::{
    EngineWorker, GenerationFailure, GenerationId, GenerationObserver, GenerationOutcome, GenerationRequest,
};
use tokio::sync::mpsc;

use crate::{api_error::ApiError, metrics::Metrics, RequestKey};

/// The worker as the server keys it: by the request's OpenAI id, unless it is shared.
pub type Worker<K = String> = EngineWorker<K>;

pub enum Event {
    Token(String),
    Finished(Result<GenerationSummary, ApiError>),
}

/// A queued or running generation; dropped before its end, it is cancelled.
pub struct Generation<K: RequestKey> {
    worker: Arc<Worker<K>>,
    id: GenerationId,
    events: mpsc::UnboundedReceiver<Event>,
}

impl<K: RequestKey> Generation<K> {
    pub fn start(
        worker: Arc<Worker<K>>,
        metrics: Arc<Metrics>,
        request: GenerationRequest<K>,
    ) -> Result<Generation<K>, ApiError> {
        let (sender, events) = mpsc::unbounded_channel();
        let observer = ChannelObserver { sender, metrics, submitted: Instant::now() };
        let id = worker
            .generate(request, Box::new(observer))
            .map_err(|full| ApiError::QueueFull(full.to_string()))?;
        Ok(Generation { worker, id, events })
    }

    /// The next token's text, or the end; `None` only if the worker vanished.
    pub async fn next(&mut self) -> Event {
        self.events
            .recv()
            .await
            .unwrap_or(Event::Finished(Err(ApiError::Generation("the engine worker stopped".into()))))
    }
}

impl<K: RequestKey> Drop for Generation<K> {
    fn drop(&mut self) {
        // A finished generation is neither running nor waiting: this stops nothing then.
        self.worker.cancel(self.id);
    }
}

/// OpenAI's `finish_reason`.
pub fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::MaxTokens | StopReason::ContextFull => "length",
        StopReason::Eos | StopReason::StopString | StopReason::Cancelled => "stop",
    }
}

struct ChannelObserver {
    sender: mpsc::UnboundedSender<Event>,
    metrics: Arc<Metrics>,
    submitted: Instant,
}

impl GenerationObserver for ChannelObserver {
    fn queued(&mut self, _ahead: usize) {}

    fn started(&mut self) {}

    fn token(&mut self, text: &str) {
        // Empty mid-character; a send fails only once the request is gone, and then the
        // generation is being cancelled.
        if !text.is_empty() {
            let _ = self.sender.send(Event::Token(text.to_string()));
        }
    }

    fn finished(self: Box<Self>, outcome: GenerationOutcome) {
        let result = match outcome {
            GenerationOutcome::Finished(summary) => {
                self.metrics.generation_finished(&summary, self.submitted.elapsed());
                Ok(summary)
            }
            GenerationOutcome::CancelledWhileQueued => Err(ApiError::ShuttingDown),
            GenerationOutcome::Failed(GenerationFailure::Engine(
                error @ GenerateError::PromptTooLong { .. },
            )) => Err(ApiError::ContextLengthExceeded(error.to_string())),
            GenerationOutcome::Failed(failure) => Err(ApiError::Generation(failure.to_string())),
        };
        let _ = self.sender.send(Event::Finished(result));
    }
}
