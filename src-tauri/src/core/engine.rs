//! The runtime's GPU worker as the app uses it: a generation is keyed by the conversation
//! it replies in, and windows are the owners whose closing cancels their generations.

use serde::Serialize;

pub use doppler_runtime::{
    GenerationFailure, GenerationId, GenerationObserver, GenerationOutcome, LoadFailure, LoadObserver,
    LoadRequest, ModelState, Prompt, QueueFull,
};

use crate::core::storage::ConversationId;

/// The app's key for a generation; it shows in the queue the UI reads as `conversationId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyKey {
    pub conversation_id: ConversationId,
}

pub type EngineWorker = doppler_runtime::EngineWorker<ReplyKey>;
pub type GenerationRequest = doppler_runtime::GenerationRequest<ReplyKey>;
pub type QueueView = doppler_runtime::QueueView<ReplyKey>;

/// Replies that may wait behind the running job: far more than a person queues by hand.
pub const MAX_WAITING_REPLIES: usize = 64;
