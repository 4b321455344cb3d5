//! Model architectures: configuration from GGUF metadata, weights on the GPU, and the
//! forward pass recorded as op lists (one file per architecture for its layer).

mod arch;
mod config;
mod file;
mod footprint;
mod forward;
pub mod limits;
mod weights;

pub use arch::{Architecture, Llama3Scaling};
use config::ConfigReader;
pub use config::{LongRope, ModelConfig};
pub use file::{open_model_source, ModelSourceError};
pub use footprint::{quantization_bits, FitAdvice, MemoryFootprint, ModelTooLarge, SessionShape};
pub use forward::{Activations, ForwardGraph, ForwardMode, StepTail};
pub use weights::{LayerWeights, ModelWeights, PostNorms, QkNormWeights, QkvBias};

use crate::{
    gguf::GgufError,
    gpu::{GpuError, WeightUploadError},
    kernels::KernelError,
};

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("architecture '{name}' is not supported (supported: {supported})")]
    UnsupportedArchitecture { name: String, supported: String },
    #[error("metadata key '{0}' is missing")]
    MissingMetadata(String),
    #[error("metadata key '{key}' is {value}, over the limit of {limit}")]
    OverLimit { key: String, value: u64, limit: u64 },
    #[error("metadata key '{key}' claims {claimed} layers but the file has no tensors of the last one")]
    LayerCount { key: String, claimed: u32 },
    #[error("invalid model configuration: {0}")]
    InvalidConfig(String),
    #[error("tensor '{0}' is missing")]
    MissingTensor(String),
    #[error("tensor '{name}' has shape {found:?}, expected {expected:?}")]
    TensorShape { name: String, expected: Vec<u64>, found: Vec<u64> },
    #[error("tensor '{name}' has type {ty}, which the engine has no kernel for")]
    UnsupportedTensorType { name: String, ty: &'static str },
    #[error("tensor '{name}' cannot join its stack as Q8_0: {source}")]
    Widen { name: String, source: crate::quant::QuantError },
    #[error(transparent)]
    Upload(#[from] WeightUploadError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("the load was cancelled")]
    LoadCancelled,
}
