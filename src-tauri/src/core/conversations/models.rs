use serde::Serialize;

use crate::core::storage::{Conversation, ConversationId, Database, StorageError, ThreadMessage};

/// A conversation with the branch on screen.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationView {
    pub conversation: Conversation,
    pub thread: Vec<ThreadMessage>,
}

impl ConversationView {
    pub fn load(db: &Database, id: ConversationId) -> Result<ConversationView, StorageError> {
        Ok(ConversationView { conversation: db.conversation(id)?, thread: db.thread(id)? })
    }
}
