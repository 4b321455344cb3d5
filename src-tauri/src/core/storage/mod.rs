//! Conversations, their message trees and settings in one SQLite database (WAL), opened
//! with versioned migrations; a database that SQLite reports corrupt is moved aside, never
//! overwritten.

mod conversations;
mod database;
mod error;
mod messages;
mod migrations;
mod models;
mod settings;

pub use database::{Database, OpenedDatabase, RecoveredDatabase};
pub use error::{OpenError, StorageError};
pub use models::{
    Conversation, ConversationId, ConversationSettings, ConversationSummary, FinishReason, GenerationStats,
    Message, MessageId, NewReply, Role, ThreadMessage,
};
