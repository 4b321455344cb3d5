//! Generation: sessions with their own KV cache and step runner
//! (`session`), the decode scheduler, generation with stop strings and streaming text
//! (`generation`), and cancellation.

mod cancel;
mod decode_scheduler;
mod generation;
mod profile_sampling;
mod session;
mod stop_strings;

pub use cancel::CancelToken;
pub use generation::{GenerateOptions, GenerationSummary, StopReason, TokenEvent};
pub use profile_sampling::{ProfileCadence, ProfileSink, ProfiledStep, StepPhase};
pub use session::Session;
pub use stop_strings::{Filtered, StopStringFilter};

use crate::{
    gguf::GgufError,
    gpu::{GpuError, GpuInitError},
    kernels::KernelError,
    model::{ModelError, ModelSourceError},
    rdrr::RdrrError,
    tokenizer::{TemplateError, TokenizerError},
};

/// Why loading or generating failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error(transparent)]
    GpuInit(#[from] GpuInitError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error(transparent)]
    Rdrr(#[from] RdrrError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("invalid model: {0}")]
    InvalidModel(String),
    #[error(transparent)]
    TooLarge(#[from] Box<crate::model::ModelTooLarge>),
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("the prompt is {prompt_tokens} tokens but the context holds {context_len}; shorten it or load the model with a longer context")]
    PromptTooLong { prompt_tokens: usize, context_len: usize },
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl From<ModelSourceError> for GenerateError {
    fn from(error: ModelSourceError) -> Self {
        match error {
            ModelSourceError::Gguf(error) => GenerateError::Gguf(error),
            ModelSourceError::Rdrr(error) => GenerateError::Rdrr(error),
        }
    }
}
