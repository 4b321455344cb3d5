use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use doppler_engine::{GenerateError, GenerationSummary, StopReason};

use super::{GenerationEvent, GenerationSink};
use crate::core::{
    backends::RemoteReplySink,
    engine::{GenerationFailure, GenerationObserver, GenerationOutcome},
    storage::{ConversationId, Database, FinishReason, GenerationStats, MessageId, NewReply},
};

/// Saved text of a streaming reply is at most this old, or this many tokens behind, when the
/// app is killed: each save is a transaction of its own.
const SAVE_INTERVAL: Duration = Duration::from_secs(1);
const SAVE_EVERY_TOKENS: usize = 32;

/// Streams one generation to its sink and keeps the reply in the database as it grows: begun
/// when generation starts, its text saved every `SAVE_INTERVAL` or `SAVE_EVERY_TOKENS`, finished
/// with its numbers at the end (a failure keeps the text so far).
pub(super) struct ReplyObserver {
    db: Arc<Database>,
    sink: Arc<dyn GenerationSink>,
    conversation_id: ConversationId,
    user_message_id: MessageId,
    model_id: String,
    /// The reply's message once begun; `None` if the database refused it, and the reply is
    /// then committed whole at the end.
    reply_id: Option<MessageId>,
    text: String,
    unsaved_tokens: usize,
    saved_at: Instant,
}

impl GenerationObserver for ReplyObserver {
    fn queued(&mut self, ahead: usize) {
        self.sink.send(GenerationEvent::Queued { ahead });
    }

    fn started(&mut self) {
        match self.db.begin_reply(self.conversation_id, self.user_message_id, &self.model_id) {
            Ok(reply) => self.reply_id = Some(reply.id),
            Err(error) => {
                tracing::warn!(%error, conversation = self.conversation_id, "could not begin a reply")
            }
        }
        self.saved_at = Instant::now();
        self.sink.send(GenerationEvent::Started);
    }

    fn token(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.text.push_str(text);
        self.unsaved_tokens += 1;
        if self.unsaved_tokens >= SAVE_EVERY_TOKENS || self.saved_at.elapsed() >= SAVE_INTERVAL {
            self.save_text();
        }
        self.sink.send(GenerationEvent::Token { text: text.to_string() });
    }

    fn finished(self: Box<Self>, outcome: GenerationOutcome) {
        let event = match outcome {
            GenerationOutcome::Finished(summary) => {
                let stats = self.stats(finish_reason(summary.stop_reason), Some(&summary));
                self.commit(&summary.text, stats)
            }
            GenerationOutcome::CancelledWhileQueued => GenerationEvent::Cancelled,
            GenerationOutcome::Failed(failure) => {
                let context_full =
                    matches!(failure, GenerationFailure::Engine(GenerateError::PromptTooLong { .. }));
                self.keep_partial_text();
                GenerationEvent::Failed { reason: failure.to_string(), context_full }
            }
        };
        self.sink.send(event);
    }
}

/// A remote model's reply is kept the same way as a local one.
impl RemoteReplySink for ReplyObserver {
    fn started(&mut self) {
        GenerationObserver::started(self);
    }

    fn token(&mut self, text: &str) {
        GenerationObserver::token(self, text);
    }

    fn finished(self: Box<Self>, result: Result<GenerationSummary, String>) {
        match result {
            Ok(summary) => GenerationObserver::finished(self, GenerationOutcome::Finished(summary)),
            Err(reason) => {
                self.keep_partial_text();
                self.sink.send(GenerationEvent::Failed { reason, context_full: false });
            }
        }
    }
}

impl ReplyObserver {
    pub fn new(
        db: Arc<Database>,
        sink: Arc<dyn GenerationSink>,
        conversation_id: ConversationId,
        user_message_id: MessageId,
        model_id: String,
    ) -> ReplyObserver {
        ReplyObserver {
            db,
            sink,
            conversation_id,
            user_message_id,
            model_id,
            reply_id: None,
            text: String::new(),
            unsaved_tokens: 0,
            saved_at: Instant::now(),
        }
    }

    fn save_text(&mut self) {
        let Some(id) = self.reply_id else { return };
        if let Err(error) = self.db.save_reply_text(self.conversation_id, id, &self.text) {
            tracing::warn!(%error, conversation = self.conversation_id, "could not save a reply's text");
        }
        self.unsaved_tokens = 0;
        self.saved_at = Instant::now();
    }

    fn stats(&self, finish_reason: FinishReason, summary: Option<&GenerationSummary>) -> GenerationStats {
        GenerationStats {
            model_id: self.model_id.clone(),
            finish_reason,
            prompt_tokens: summary.map_or(0, |s| s.prompt_tokens as u32),
            generated_tokens: summary.map_or(0, |s| s.generated_tokens as u32),
            tokens_per_second: summary.map_or(0.0, |s| s.tokens_per_second),
            time_to_first_token_ms: summary.map_or(0.0, |s| s.time_to_first_token_ms),
        }
    }

    /// The finished reply: completes the begun message, or adds it whole.
    fn commit(&self, text: &str, stats: GenerationStats) -> GenerationEvent {
        let saved = match self.reply_id {
            Some(id) => self.db.finish_reply(self.conversation_id, id, text, &stats),
            None => self.db.add_reply(&NewReply {
                conversation_id: self.conversation_id,
                parent_id: self.user_message_id,
                content: text.to_string(),
                stats,
            }),
        };
        match saved {
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

    /// After an engine failure: the text generated so far stays, marked failed; a reply that
    /// produced nothing is removed.
    fn keep_partial_text(&self) {
        let Some(id) = self.reply_id else { return };
        let kept = match self.text.is_empty() {
            true => self.db.discard_reply(self.conversation_id, id),
            false => self
                .db
                .finish_reply(self.conversation_id, id, &self.text, &self.stats(FinishReason::Failed, None))
                .map(drop),
        };
        if let Err(error) = kept {
            tracing::error!(%error, conversation = self.conversation_id, "could not keep a failed reply's text");
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
