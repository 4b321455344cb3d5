//! Where models come from: the Hugging Face Hub client (`hub`), resumable verified downloads
//! (`download`), the quant picker (`quant`) and `pull`, which puts them together and installs
//! the result into the engine's model store; `convert` makes RDRR models from GGUF files and
//! Hugging Face safetensors folders.

pub mod convert;
pub mod download;
pub mod hub;
mod pull;
pub mod quant;

pub use pull::{pull, PullError, PullEvent, PullOutcome, PullRequest, Selection};
