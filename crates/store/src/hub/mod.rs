//! The Hugging Face Hub's HTTP API, as `huggingface_hub` speaks it: `HF_ENDPOINT` and
//! `HF_TOKEN` from the environment, model search (GGUF and safetensors repositories), a
//! repository's file tree, file downloads
//! through `resolve` with its redirect to a CDN.

mod client;
mod config;
mod error;
mod listing;
mod repo_path;

pub use client::{HubClient, OpenedFile};
pub use config::{HubConfig, DEFAULT_ENDPOINT, ENDPOINT_ENV, TOKEN_ENV};
pub use error::HubError;
pub use listing::{HubModel, ModelFormat, RepoFile};
pub(crate) use repo_path::{check_revision, repo_segments};
