//! The runtime's GPU worker as the app uses it: a generation is keyed by the conversation
//! it replies in (or by the request to the app's own server, which shares the worker), and
//! windows are the owners whose closing cancels their generations.

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

/// What a generation on the app's worker is for, as the queue shows it: `conversationId` or
/// `requestId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum EngineKey {
    Reply(ReplyKey),
    /// A request to the OpenAI-compatible server the app runs when its settings say so.
    ServerRequest {
        request_id: String,
    },
}

/// The server names its requests by their OpenAI id.
impl From<String> for EngineKey {
    fn from(request_id: String) -> Self {
        EngineKey::ServerRequest { request_id }
    }
}

pub type EngineWorker = doppler_runtime::EngineWorker<EngineKey>;
pub type GenerationRequest = doppler_runtime::GenerationRequest<EngineKey>;
pub type QueueView = doppler_runtime::QueueView<EngineKey>;

/// Replies that may wait behind the running job: far more than a person queues by hand.
pub const MAX_WAITING_REPLIES: usize = 64;
