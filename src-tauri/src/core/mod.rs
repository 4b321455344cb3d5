//! The app's domains, each with its commands (thin, Tauri-facing) over services that run
//! without a window.

pub mod app;
pub mod backends;
pub mod chat;
pub mod conversations;
pub mod conversions;
pub mod downloads;
pub mod engine;
pub mod models;
pub mod profiler;
pub mod server;
pub mod storage;
