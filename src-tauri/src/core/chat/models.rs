use serde::Serialize;

use crate::core::{
    engine::GenerationId,
    storage::{Message, StorageError},
};

/// What the UI hears about one generation, in order: maybe `queued` (again as the queue
/// moves), `started`, `token`s, then exactly one of `done`, `cancelled` or `failed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum GenerationEvent {
    /// Waiting behind `ahead` other jobs.
    Queued {
        ahead: usize,
    },
    Started,
    Token {
        text: String,
    },
    /// The reply ended and is saved (a stopped reply with what was generated).
    Done {
        message: Message,
    },
    /// Stopped before it started: nothing was generated or saved.
    Cancelled,
    /// `context_full`: the conversation no longer fits the model's context.
    Failed {
        reason: String,
        context_full: bool,
    },
}

/// Where a generation's events go: the window's IPC channel, or a test's collector.
pub trait GenerationSink: Send + Sync + 'static {
    fn send(&self, event: GenerationEvent);
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendReceipt {
    /// The committed user message.
    pub message: Message,
    pub generation_id: GenerationId,
}

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("the message is empty")]
    EmptyMessage,
    #[error("only your own messages can be edited")]
    NotEditable,
    #[error("message {0} is not one of your messages, and a reply must follow one")]
    NotAUserMessage(crate::core::storage::MessageId),
    #[error("no model is selected; pick one in the model picker")]
    NoModel,
    #[error(transparent)]
    QueueFull(#[from] crate::core::engine::QueueFull),
    /// A remote model's server could not be asked.
    #[error(transparent)]
    Backend(#[from] crate::core::backends::BackendError),
}
