use std::sync::Arc;

use doppler_engine::{GenerateError, GenerationSummary, StopReason};

use super::{GenerationEvent, GenerationSink};
use crate::core::{
    engine::{GenerationFailure, GenerationObserver, GenerationOutcome},
    storage::{ConversationId, Database, FinishReason, GenerationStats, MessageId, NewReply},
};

/// Streams one generation to its sink and commits the reply when it ends.
pub(super) struct ReplyObserver {
    pub db: Arc<Database>,
    pub sink: Arc<dyn GenerationSink>,
    pub conversation_id: ConversationId,
    pub user_message_id: MessageId,
    pub model_id: String,
}

impl GenerationObserver for ReplyObserver {
    fn queued(&mut self, ahead: usize) {
        self.sink.send(GenerationEvent::Queued { ahead });
    }

    fn started(&mut self) {
        self.sink.send(GenerationEvent::Started);
    }

    fn token(&mut self, text: &str) {
        if !text.is_empty() {
            self.sink.send(GenerationEvent::Token { text: text.to_string() });
        }
    }

    fn finished(self: Box<Self>, outcome: GenerationOutcome) {
        let event = match outcome {
            GenerationOutcome::Finished(summary) => self.commit(&summary),
            GenerationOutcome::CancelledWhileQueued => GenerationEvent::Cancelled,
            GenerationOutcome::Failed(failure) => {
                let context_full =
                    matches!(failure, GenerationFailure::Engine(GenerateError::PromptTooLong { .. }));
                GenerationEvent::Failed { reason: failure.to_string(), context_full }
            }
        };
        self.sink.send(event);
    }
}

impl ReplyObserver {
    fn commit(&self, summary: &GenerationSummary) -> GenerationEvent {
        let reply = NewReply {
            conversation_id: self.conversation_id,
            parent_id: self.user_message_id,
            content: summary.text.clone(),
            stats: GenerationStats {
                model_id: self.model_id.clone(),
                finish_reason: finish_reason(summary.stop_reason),
                prompt_tokens: summary.prompt_tokens as u32,
                generated_tokens: summary.generated_tokens as u32,
                tokens_per_second: summary.tokens_per_second,
                time_to_first_token_ms: summary.time_to_first_token_ms,
            },
        };
        match self.db.add_reply(&reply) {
            Ok(message) => GenerationEvent::Done { message },
            Err(error) => {
                tracing::error!(%error, conversation = self.conversation_id, "could not save a reply");
                GenerationEvent::Failed {
                    reason: format!("the reply could not be saved: {error}"),
                    context_full: false,
                }
            }
        }
    }
}

fn finish_reason(stop: StopReason) -> FinishReason {
    match stop {
        StopReason::Eos => FinishReason::Eos,
        StopReason::MaxTokens => FinishReason::MaxTokens,
        StopReason::StopString => FinishReason::StopString,
        StopReason::Cancelled => FinishReason::Cancelled,
        StopReason::ContextFull => FinishReason::ContextFull,
    }
}
