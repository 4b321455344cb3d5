//! DOPPLER's inference engine: loads GGUF models, runs them with hand-written WGSL kernels
//! on wgpu, tokenizes, renders chat templates and streams generated tokens.
//!
//! The engine has no UI dependency: the CLI and the desktop app both sit on top of it.

pub mod generate;
pub mod gguf;
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod quant;
pub mod store;
pub mod tokenizer;
