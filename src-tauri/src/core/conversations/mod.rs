//! The conversation list and the branch on screen: thin commands over the database.

pub mod commands;
mod export;
mod models;

pub use export::to_markdown;
pub use models::ConversationView;
