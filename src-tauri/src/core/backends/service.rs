use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use doppler_engine::{ChatMessage, GenerateOptions, GenerationSummary};
use reqwest::Client;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::{
    key_store::{off_runtime, SharedKeyStore},
    openai_client::{self, Endpoint, StreamEvent},
    BackendError, NewRemoteBackend, RemoteBackend, RemoteModelId, RemoteModels,
};
use crate::core::{engine::GenerationId, storage::Database};

const BACKENDS_KEY: &str = "remote_backends";

/// A server that does not answer in this long is reported unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Listing models is quick on any server; the picker must not hang on a dead one.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// Remote generations are numbered from here, far above the local worker's ids (which count
/// from 1), so that one `stop` finds either kind; still exact as a JavaScript number.
const FIRST_REMOTE_GENERATION: GenerationId = 1 << 40;

/// Follows one remote reply; runs on the async runtime.
pub trait RemoteReplySink: Send + 'static {
    fn started(&mut self);
    fn token(&mut self, text: &str);
    /// The reply ended: finished or stopped (`Ok`), or failed with a reason for the user.
    fn finished(self: Box<Self>, result: Result<GenerationSummary, String>);
}

/// The remote backends the user added, their models, and chats with them.
pub struct RemoteBackends {
    db: Arc<Database>,
    keys: SharedKeyStore,
    client: Client,
    runtime: Handle,
    running: Arc<Mutex<HashMap<GenerationId, CancellationToken>>>,
    next_generation: AtomicU64,
}

impl RemoteBackends {
    /// Replies stream on `runtime`.
    pub fn new(db: Arc<Database>, keys: SharedKeyStore, runtime: Handle) -> RemoteBackends {
        let client = Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("DOPPLER/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the HTTP client's settings are valid");
        RemoteBackends {
            db,
            keys,
            client,
            runtime,
            running: Arc::default(),
            next_generation: AtomicU64::new(FIRST_REMOTE_GENERATION),
        }
    }

    pub fn list(&self) -> Result<Vec<RemoteBackend>, BackendError> {
        Ok(self.db.setting(BACKENDS_KEY)?.unwrap_or_default())
    }

    /// Adds a backend; its key goes to the keychain first, so a keychain that refuses it
    /// leaves nothing half-added.
    pub async fn add(&self, new: NewRemoteBackend) -> Result<RemoteBackend, BackendError> {
        let name = new.name.trim();
        if name.is_empty() {
            return Err(BackendError::NoName);
        }
        let base_url = checked_base_url(&new.base_url)?;
        let mut backends = self.list()?;
        let backend = RemoteBackend {
            id: unused_id(&backends),
            name: name.to_string(),
            base_url,
            has_api_key: new.api_key.as_deref().is_some_and(|key| !key.trim().is_empty()),
        };
        if let Some(key) = new.api_key.map(|key| key.trim().to_string()).filter(|key| !key.is_empty()) {
            let account = backend.key_account();
            off_runtime(&self.keys, move |keys| keys.set(&account, &key)).await?;
        }
        backends.push(backend.clone());
        self.db.set_setting(BACKENDS_KEY, &backends)?;
        Ok(backend)
    }

    /// Removes a backend and its key. Conversations with its models keep their messages.
    pub async fn remove(&self, backend_id: &str) -> Result<(), BackendError> {
        let mut backends = self.list()?;
        let backend = find(&backends, backend_id)?.clone();
        backends.retain(|other| other.id != backend_id);
        self.db.set_setting(BACKENDS_KEY, &backends)?;
        if backend.has_api_key {
            let account = backend.key_account();
            off_runtime(&self.keys, move |keys| keys.delete(&account)).await?;
        }
        Ok(())
    }

    /// Every backend's models, asked of all at once; one that fails says why in its entry.
    pub async fn models(&self) -> Result<Vec<RemoteModels>, BackendError> {
        let lists = self.list()?.into_iter().map(|backend| async move {
            let listed = match endpoint_of(&self.keys, &backend).await {
                Ok(endpoint) => {
                    match tokio::time::timeout(
                        LIST_TIMEOUT,
                        openai_client::list_models(&self.client, &endpoint),
                    )
                    .await
                    {
                        Ok(listed) => listed,
                        Err(_) => Err(BackendError::Unreachable {
                            name: backend.name.clone(),
                            url: backend.base_url.clone(),
                            reason: format!("no answer in {} s", LIST_TIMEOUT.as_secs()),
                        }),
                    }
                }
                Err(error) => Err(error),
            };
            let (model_ids, error) = match listed {
                Ok(models) => (
                    models
                        .into_iter()
                        .map(|model| RemoteModelId { backend_id: backend.id.clone(), model }.to_model_id())
                        .collect(),
                    None,
                ),
                Err(error) => (Vec::new(), Some(error.to_string())),
            };
            RemoteModels { backend, model_ids, error }
        });
        Ok(futures_util::future::join_all(lists).await)
    }

    /// Streams a reply from a remote model to `sink`; the returned id stops it.
    pub fn chat(
        &self,
        model: &RemoteModelId,
        messages: Vec<ChatMessage>,
        options: GenerateOptions,
        sink: Box<dyn RemoteReplySink>,
    ) -> Result<GenerationId, BackendError> {
        let backend = find(&self.list()?, &model.backend_id)?.clone();
        let id = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        lock(&self.running).insert(id, cancel.clone());
        let running = self.running.clone();
        let client = self.client.clone();
        let keys = self.keys.clone();
        let model = model.model.clone();
        self.runtime.spawn(async move {
            let mut sink = sink;
            let result = match endpoint_of(&keys, &backend).await {
                Ok(endpoint) => {
                    let mut on_event = |event: StreamEvent| match event {
                        StreamEvent::Started => sink.started(),
                        StreamEvent::Token(text) => sink.token(text),
                    };
                    openai_client::stream_chat(
                        &client,
                        &endpoint,
                        &model,
                        &messages,
                        &options,
                        &cancel,
                        &mut on_event,
                    )
                    .await
                }
                Err(error) => Err(error),
            };
            // Not running any more before anyone hears it finished, as with local replies.
            lock(&running).remove(&id);
            sink.finished(result.map_err(|error| error.to_string()));
        });
        Ok(id)
    }

    /// Stops a remote reply; returns whether it was running.
    pub fn stop(&self, id: GenerationId) -> bool {
        match lock(&self.running).get(&id) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }
}

async fn endpoint_of(keys: &SharedKeyStore, backend: &RemoteBackend) -> Result<Endpoint, BackendError> {
    let api_key = match backend.has_api_key {
        true => {
            let account = backend.key_account();
            off_runtime(keys, move |keys| keys.get(&account)).await?
        }
        false => None,
    };
    Ok(Endpoint { name: backend.name.clone(), base_url: backend.base_url.clone(), api_key })
}

fn find<'a>(backends: &'a [RemoteBackend], backend_id: &str) -> Result<&'a RemoteBackend, BackendError> {
    backends
        .iter()
        .find(|backend| backend.id == backend_id)
        .ok_or_else(|| BackendError::UnknownBackend(backend_id.to_string()))
}

/// `remote-N` with N one past the highest in use.
fn unused_id(backends: &[RemoteBackend]) -> String {
    let highest = backends
        .iter()
        .filter_map(|backend| backend.id.strip_prefix("remote-")?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    format!("remote-{}", highest + 1)
}

/// An http(s) URL with a host, without a trailing slash.
fn checked_base_url(url: &str) -> Result<String, BackendError> {
    let trimmed = url.trim().trim_end_matches('/');
    let parsed = reqwest::Url::parse(trimmed).map_err(|_| BackendError::BadUrl(url.trim().to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(BackendError::BadUrl(url.trim().to_string()));
    }
    Ok(trimmed.to_string())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_must_be_web_addresses() {
        assert_eq!(checked_base_url(" http://127.0.0.1:8080/v1/ ").unwrap(), "http://127.0.0.1:8080/v1");
        assert_eq!(checked_base_url("https://api.example.com/v1").unwrap(), "https://api.example.com/v1");
        for refused in ["", "127.0.0.1:8080", "ftp://host/v1", "file:///etc/passwd", "http://"] {
            assert!(matches!(checked_base_url(refused), Err(BackendError::BadUrl(_))), "{refused}");
        }
    }

    #[test]
    fn ids_are_never_reused_while_taken() {
        let backend = |id: &str| RemoteBackend {
            id: id.to_string(),
            name: id.to_string(),
            base_url: "http://x".to_string(),
            has_api_key: false,
        };
        assert_eq!(unused_id(&[]), "remote-1");
        assert_eq!(unused_id(&[backend("remote-1"), backend("remote-7")]), "remote-8");
    }

    #[test]
    fn remote_model_ids_keep_slashes_in_the_model_name() {
        let id = RemoteModelId::parse("remote-2/meta-llama/Llama-3.1-8B").unwrap();
        assert_eq!(id.backend_id, "remote-2");
        assert_eq!(id.model, "meta-llama/Llama-3.1-8B");
        assert_eq!(id.to_model_id(), "remote-2/meta-llama/Llama-3.1-8B");
        assert_eq!(RemoteModelId::parse("smollm2-135m-instruct"), None);
    }
}
