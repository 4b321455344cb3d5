//! The engine off the UI thread: one worker thread owns the GPU device and the loaded
//! models, and runs loads and generations one at a time from a queue the UI can see.

mod job_queue;
mod model_states;
mod requests;
mod worker;

pub use job_queue::{GenerationId, QueueView, QueuedGeneration};
pub use model_states::ModelState;
pub use requests::{
    GenerationFailure, GenerationObserver, GenerationOutcome, GenerationRequest, LoadFailure, LoadObserver,
    LoadRequest,
};
pub use worker::EngineWorker;
