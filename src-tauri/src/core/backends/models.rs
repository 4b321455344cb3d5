use serde::{Deserialize, Serialize};

use super::KeyStoreError;
use crate::core::storage::StorageError;

/// An OpenAI-compatible server the user added (vLLM, llama-server, Ollama, another DOPPLER).
/// Its key, if any, is in the keychain under [`RemoteBackend::key_account`], never here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteBackend {
    /// `remote-N`: never a local model's name, which has no `/` after it in a model id.
    pub id: String,
    pub name: String,
    /// Up to and including the API's version, as OpenAI clients take it: `http://host:port/v1`.
    pub base_url: String,
    pub has_api_key: bool,
}

impl RemoteBackend {
    pub fn key_account(&self) -> String {
        format!("remote-backend:{}", self.id)
    }
}

/// What the user fills in to add a backend.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewRemoteBackend {
    pub name: String,
    pub base_url: String,
    /// Blank: the server wants none.
    pub api_key: Option<String>,
}

/// A remote model as the chat names it: `{backend id}/{model}`. Local model names never hold
/// a `/`, so the chat can tell the two apart by the id alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteModelId {
    pub backend_id: String,
    pub model: String,
}

impl RemoteModelId {
    pub fn parse(model_id: &str) -> Option<RemoteModelId> {
        let (backend_id, model) = model_id.split_once('/')?;
        Some(RemoteModelId { backend_id: backend_id.to_string(), model: model.to_string() })
    }

    pub fn to_model_id(&self) -> String {
        format!("{}/{}", self.backend_id, self.model)
    }
}

/// One backend's models for the picker: listed, or why they could not be.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteModels {
    pub backend: RemoteBackend,
    /// Model ids as the chat takes them (`{backend id}/{model}`).
    pub model_ids: Vec<String>,
    pub error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    KeyStore(#[from] KeyStoreError),
    #[error("give the server a name")]
    NoName,
    #[error("'{0}' is not an http:// or https:// address (for example http://127.0.0.1:8080/v1)")]
    BadUrl(String),
    #[error("there is no remote server '{0}'; it may have been removed")]
    UnknownBackend(String),
    #[error("cannot reach {name} at {url}: {reason}")]
    Unreachable { name: String, url: String, reason: String },
    #[error("{name} refused the API key (HTTP {status}): {message}")]
    Unauthorized { name: String, status: u16, message: String },
    #[error("{name} answered HTTP {status}: {message}")]
    Status { name: String, status: u16, message: String },
    #[error("{name} stopped answering mid-reply: {reason}")]
    BrokenOff { name: String, reason: String },
    #[error("{name} sent something that is not an OpenAI-compatible answer: {reason}")]
    Protocol { name: String, reason: String },
}
