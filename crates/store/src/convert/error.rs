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
    #[error("unknown quantization '{quant}' (Q8_0 and F16 are supported)")]
    UnknownQuant { quant: String },
    #[error("a GGUF converts with its own weight types; --quant {quant:?} applies to safetensors folders")]
    QuantForGguf { quant: super::TargetQuant },
    #[error("{} is neither a .gguf file nor a Hugging Face model folder", path.display())]
    UnsupportedSource { path: PathBuf },
}

impl ConvertError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ConvertError {
        let path = path.to_path_buf();
        move |source| ConvertError::Io { path, source }
    }
}
