//! The profiler view's backend: sampled kernel timings and token speeds of the app's replies,
//! aggregated by kernel, kind and layer, with the adapter's facts and memory, exported as JSON
//! or as a Chrome trace.

pub mod commands;
mod models;
mod service;

pub use models::*;
pub use service::{chrome_trace, ProfilerEventSink, ProfilerService};
