//! DOPPLER's inference engine: loads GGUF models, runs them with hand-written WGSL kernels
//! on wgpu, tokenizes, renders chat templates and streams generated tokens.
//!
//! The engine has no UI dependency: the CLI and the desktop app both sit on top of it.

pub mod evaluate;
pub mod generate;
pub mod gguf;
pub mod gpu;
pub mod kernels;
pub mod load;
pub mod model;
pub mod quant;
pub mod rdrr;
pub mod store;
pub mod synth;
pub mod tokenizer;

pub use generate::{
    CancelToken, GenerateError, GenerateOptions, GenerationSummary, ProfileCadence, ProfiledStep, Session,
    StepPhase, StopReason, TokenEvent,
};
pub use kernels::sampling::SamplingParams;
pub use load::{Engine, EngineOptions, LoadOptions, LoadProgress, LoadedModel, ModelFile, ModelInfo};
pub use tokenizer::{ChatMessage, Role};
