//! The model manager's side: searching the Hugging Face Hub, a repository's GGUF models with
//! fit badges for this machine, downloads that pause, resume and survive a restart, and a
//! short list of chat models recommended for this machine's memory tier.

pub mod commands;
mod models;
mod recommendations;
mod saved_list;
mod service;

pub use models::{Download, DownloadFile, DownloadStatus, MachineMemory, Recommendation, RepoView};
pub use recommendations::{curated_for, CuratedModel};
pub use saved_list::SavedList;
pub use service::{adapter_memory, DownloadService, DownloadsError, MemoryProbe};
