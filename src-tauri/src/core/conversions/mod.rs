//! The model manager's conversions: a Hugging Face safetensors repository downloaded (resuming
//! what an earlier try left) and converted to an RDRR model in the store, in the quantization
//! the user picked, with progress pushed to the window as downloads' is.

pub mod commands;
mod models;
mod service;

pub use models::{Conversion, ConversionStatus};
pub use service::{ConversionError, ConversionService};
