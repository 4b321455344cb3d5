use doppler_engine::store::StoreError;

use crate::{download::DownloadError, hub::HubError};

/// Why pulling a model from the Hub failed.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    Hub(#[from] HubError),
    #[error("{repo} has no GGUF model files (only GGUF repositories can be pulled for now)")]
    NoGguf { repo: String },
    #[error("{repo} has no GGUF file '{file}' (its GGUF files: {})", available.join(", "))]
    NoSuchFile { repo: String, file: String, available: Vec<String> },
    #[error("{repo} has no {quant} GGUF (it has: {})", available.join(", "))]
    NoSuchQuant { repo: String, quant: String, available: Vec<String> },
    #[error("{repo} has several GGUF files; pick one with --quant or --file (it has: {})", available.join(", "))]
    ChooseOne { repo: String, available: Vec<String> },
    #[error("{repo} has several {quant} GGUF files; pick one with --file ({})", files.join(", "))]
    AmbiguousQuant { repo: String, quant: String, files: Vec<String> },
    #[error("cannot make a model name from '{file}'; pass --name")]
    NoName { file: String },
    #[error(transparent)]
    Download(#[from] DownloadError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
