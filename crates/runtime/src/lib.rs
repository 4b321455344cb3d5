//! The GPU off the caller's thread: one worker thread owns the GPU device and the loaded
//! models, and runs loads and generations one at a time, in arrival order, from a bounded
//! queue that callers can see. The app, the CLI and the server share it; generations are
//! keyed by whatever the caller calls them (a conversation, an HTTP request).

mod job_queue;
mod model_states;
mod requests;
mod session_pool;
mod worker;

/// Tests only: the faults `EngineWorker::inject_fault` produces on the worker's device.
#[cfg(feature = "fault-injection")]
pub use doppler_engine::gpu::GpuFault as InjectedFault;
pub use job_queue::{GenerationId, QueueFull, QueueView, QueuedGeneration};
pub use model_states::ModelState;
pub use requests::{
    GenerationFailure, GenerationObserver, GenerationOutcome, GenerationRequest, LoadFailure, LoadObserver,
    LoadRequest, ProfileSampling, Prompt,
};
pub use worker::EngineWorker;
