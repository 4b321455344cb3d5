//! The app's own OpenAI-compatible server (`doppler_server`), switched on in the settings: it
//! answers on the app's engine worker with the model the app has loaded, so editors, agents
//! and scripts on this machine share one GPU queue with the chat window.

pub mod commands;
mod models;
mod service;

pub use models::{ServerError, ServerSettings, ServerStatus};
pub use service::ServerService;
