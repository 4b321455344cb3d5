//! Remote backends: OpenAI-compatible servers (vLLM, llama-server, Ollama, another DOPPLER)
//! whose models appear beside the local ones and whose replies stream into the same chat.
//! Their API keys live in the OS keychain and never reach the webview.

pub mod commands;
mod key_store;
mod models;
mod openai_client;
mod service;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub use key_store::MemoryKeyStore;
pub use key_store::{off_runtime, KeyStore, KeyStoreError, OsKeychain, SharedKeyStore};
pub use models::{BackendError, NewRemoteBackend, RemoteBackend, RemoteModelId, RemoteModels};
pub use service::{RemoteBackends, RemoteReplySink};
