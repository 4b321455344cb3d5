//! Sending messages and streaming replies: the service commits user messages, queues the
//! generation on the engine worker and commits the reply when it ends (stopped or not).

pub mod commands;
mod models;
mod prompt;
mod reply_observer;
mod service;

pub use models::{ChatError, GenerationEvent, GenerationSink, SendReceipt};
pub use service::{ChatService, ReplyTarget};
