use std::path::PathBuf;

use doppler_engine::{
    generate::{ProfileCadence, ProfileSink},
    ChatMessage, GenerateError, GenerateOptions, GenerationSummary, ModelInfo,
};

/// One generation to run; `key` is the caller's name for it (shown in the queue).
pub struct GenerationRequest<K> {
    pub model_id: String,
    /// Who asked (a window, a connection): [`crate::EngineWorker::cancel_owned_by`] stops
    /// everything it asked for.
    pub owner: String,
    pub key: K,
    pub prompt: Prompt,
    pub options: GenerateOptions,
}

/// What the model continues.
pub enum Prompt {
    /// Rendered with the model's chat template; the reply follows.
    Chat(Vec<ChatMessage>),
    /// Used as-is: beginning-of-sequence by the model's rule, special tokens parsed.
    Text(String),
}

/// Follows one generation; called on the worker thread.
pub trait GenerationObserver: Send {
    /// `ahead`: jobs that run before this one.
    fn queued(&mut self, ahead: usize);
    fn started(&mut self);
    fn token(&mut self, text: &str);
    fn finished(self: Box<Self>, outcome: GenerationOutcome);

    /// Asked once before the generation starts: `Some` times the decode steps its cadence
    /// picks (and the first prefill step) and hands their kernel timings to the sink.
    fn profile_sampling(&mut self) -> Option<ProfileSampling> {
        None
    }
}

/// Sampled kernel profiles of a generation, where the adapter has timestamp queries.
pub struct ProfileSampling {
    pub cadence: ProfileCadence,
    pub sink: ProfileSink,
}

pub enum GenerationOutcome {
    /// Ended by the model, a limit or a stop; a stopped generation holds what was generated.
    Finished(GenerationSummary),
    /// Stopped before it started: nothing was generated.
    CancelledWhileQueued,
    Failed(GenerationFailure),
}

#[derive(Debug, thiserror::Error)]
pub enum GenerationFailure {
    #[error("the model '{0}' is not loaded; load it from the model picker")]
    ModelNotLoaded(String),
    #[error(transparent)]
    Engine(#[from] GenerateError),
    #[error("the engine crashed: {0}")]
    Crashed(String),
    #[error("the GPU device was lost and the model could not be loaded again: {0}")]
    ReloadFailed(LoadFailure),
}

/// A model file to load and keep on the GPU under `model_id`.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    pub model_id: String,
    pub path: PathBuf,
    pub context_len: Option<u32>,
}

/// Follows one load; called on the worker thread.
pub trait LoadObserver: Send {
    fn progress(&mut self, fraction: f32, stage: &str);
    fn finished(self: Box<Self>, result: Result<ModelInfo, LoadFailure>);
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadFailure {
    /// The GPU could not be opened.
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    #[error("{0}")]
    Model(String),
    #[error("the engine is shutting down")]
    ShuttingDown,
    #[error("the load was cancelled")]
    Cancelled,
}
