use std::path::{Path, PathBuf};

use doppler_engine::{gguf::GgufError, rdrr::RdrrWriteError, store::StoreError};

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error(transparent)]
    Write(#[from] RdrrWriteError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot make a model name from {}; pass --name", path.display())]
    NoName { path: PathBuf },
    #[error("{}: {reason}", path.display())]
    Json { path: PathBuf, reason: String },
    #[error("{}: not a valid safetensors file: {reason}", path.display())]
    Safetensors { path: PathBuf, reason: String },
    #[error("{} holds no .safetensors files", folder.display())]
    NoSafetensors { folder: PathBuf },
    #[error("model_type '{model_type}' does not convert (llama, mistral, qwen2, qwen3, phi3, gemma3 and gemma3_text do)")]
    UnsupportedArchitecture { model_type: String },
    #[error("config.json has no '{key}'")]
    MissingConfig { key: &'static str },
    #[error("config.json '{key}': {reason}")]
    InvalidConfig { key: &'static str, reason: String },
    #[error("tokenizer: {reason}")]
    Tokenizer { reason: String },
    #[error("the model has no tensor '{name}'")]
    MissingTensor { name: String },
    #[error("tensor '{tensor}' has shape {shape:?}, which does not convert")]
    Shape { tensor: String, shape: Vec<u64> },
    #[error("tensor '{tensor}' is {dtype}; F32, F16 and BF16 convert")]
    UnsupportedDtype { tensor: String, dtype: String },
    #[error("tensor '{tensor}': {source}")]
    Quantize {
        tensor: String,
        #[source]
        source: doppler_engine::quant::QuantError,
    },
    #[error("unknown quantization '{quant}' ({} are supported)", super::TargetQuant::names_listed())]
    UnknownQuant { quant: String },
    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),
    #[error(transparent)]
    Download(#[from] crate::download::DownloadError),
    #[error("{repo} has no .safetensors files{}", if *gguf { "; it has GGUF files: install one with `doppler models pull`" } else { "" })]
    NoSafetensorsInRepo { repo: String, gguf: bool },
    #[error("{repo} has no {file}, which converting needs")]
    MissingRepoFile { repo: String, file: String },
    #[error("{repo}: model.safetensors.index.json names {file}, which the repository does not have")]
    MissingShard { repo: String, file: String },
    #[error("the conversion was cancelled; nothing was installed")]
    Cancelled,
    #[error("a GGUF converts with its own weight types; --quant {} applies to safetensors models", quant.name())]
    QuantForGguf { quant: super::TargetQuant },
}

impl ConvertError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ConvertError {
        let path = path.to_path_buf();
        move |source| ConvertError::Io { path, source }
    }
}
