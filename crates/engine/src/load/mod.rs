//! Loading: a model file read and checked before any GPU work (`model_file`), then the
//! engine that opens the GPU and uploads the weights within its memory budget (`engine`).

mod engine;
mod model_file;

pub use engine::{
    default_max_batch, Engine, EngineOptions, LoadOptions, LoadProgress, LoadedModel, ModelInfo,
};
pub use model_file::ModelFile;
