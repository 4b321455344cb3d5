use std::{
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::Duration,
};

use doppler_server::{check_host, router, ServeError, ServerState};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};

use super::{ServerError, ServerSettings, ServerStatus};
use crate::core::{
    app::AppSettings,
    backends::{off_runtime, SharedKeyStore},
    engine::{EngineWorker, ModelState},
    storage::Database,
};

const SETTINGS_KEY: &str = "local_server";
/// Whether the keychain holds the server's key: the keychain is asked only when it does, so a
/// session without one (no Secret Service) still serves on loopback.
const HAS_KEY_KEY: &str = "local_server_has_key";
/// The server's own API key in the keychain.
const KEY_ACCOUNT: &str = "local-server";
/// Requests still streaming when the server is switched off get this long to end; then their
/// connections are dropped, which cancels their generations.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Starts and stops the app's server as its settings say.
pub struct ServerService {
    db: Arc<Database>,
    worker: Arc<EngineWorker>,
    keys: SharedKeyStore,
    /// One change at a time: a start never races a stop.
    running: tokio::sync::Mutex<Option<RunningServer>>,
    /// Why the server is not running although it is switched on.
    last_error: Mutex<Option<String>>,
}

struct RunningServer {
    url: String,
    model_id: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl ServerService {
    pub fn new(db: Arc<Database>, worker: Arc<EngineWorker>, keys: SharedKeyStore) -> ServerService {
        ServerService { db, worker, keys, running: Default::default(), last_error: Mutex::new(None) }
    }

    pub fn settings(&self) -> Result<ServerSettings, ServerError> {
        Ok(self.db.setting(SETTINGS_KEY)?.unwrap_or_default())
    }

    pub async fn status(&self) -> Result<ServerStatus, ServerError> {
        let settings = self.settings()?;
        let has_api_key = self.has_api_key()?;
        let running = self.running.lock().await;
        let error = match running.as_ref() {
            Some(_) => None,
            None => self.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        };
        Ok(ServerStatus {
            settings,
            has_api_key,
            url: running.as_ref().map(|server| server.url.clone()),
            model_id: running.as_ref().map(|server| server.model_id.clone()),
            error,
        })
    }

    /// Saves the settings (and the key: `Some("")` removes it, `None` keeps it), then starts,
    /// restarts or stops the server to match.
    pub async fn configure(
        &self,
        settings: ServerSettings,
        api_key: Option<String>,
    ) -> Result<ServerStatus, ServerError> {
        if let Some(key) = api_key.map(|key| key.trim().to_string()) {
            let has_key = !key.is_empty();
            off_runtime(&self.keys, move |keys| match has_key {
                true => keys.set(KEY_ACCOUNT, &key),
                false => keys.delete(KEY_ACCOUNT),
            })
            .await?;
            self.db.set_setting(HAS_KEY_KEY, &has_key)?;
        }
        self.db.set_setting(SETTINGS_KEY, &settings)?;
        self.apply().await;
        self.status().await
    }

    /// Brings the server in line with its stored settings and the loaded model.
    pub async fn apply(&self) {
        let mut running = self.running.lock().await;
        if let Some(server) = running.take() {
            stop(server).await;
        }
        let started = match self.settings() {
            Ok(settings) if settings.enabled => self.start(&settings).await.map(Some),
            Ok(_) => Ok(None),
            Err(error) => Err(error),
        };
        let error = match started {
            Ok(server) => {
                *running = server;
                None
            }
            Err(error) => {
                tracing::warn!(%error, "the app's server is not running");
                Some(error.to_string())
            }
        };
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = error;
    }

    /// A model finished loading: the server, if on, serves it from now on (or starts, if it
    /// waited for a model).
    pub async fn model_loaded(&self) {
        let Ok(settings) = self.settings() else { return };
        if !settings.enabled {
            return;
        }
        let serving = self.running.lock().await.as_ref().map(|server| server.model_id.clone());
        if serving != self.served_model().map(|(model_id, _)| model_id) {
            self.apply().await;
        }
    }

    pub async fn stop(&self) {
        if let Some(server) = self.running.lock().await.take() {
            stop(server).await;
        }
    }

    async fn start(&self, settings: &ServerSettings) -> Result<RunningServer, ServerError> {
        let host: IpAddr =
            settings.host.trim().parse().map_err(|_| ServerError::BadHost(settings.host.clone()))?;
        let api_key = self.api_key().await?;
        check_host(host, api_key.as_deref()).map_err(|error| match error {
            ServeError::ExposedWithoutKey(host) => ServerError::ExposedWithoutKey(host),
            other => other.into(),
        })?;
        let (model_id, context_len) = self.served_model().ok_or(ServerError::NoModel)?;
        let address = SocketAddr::new(host, settings.port);
        let listener =
            TcpListener::bind(address).await.map_err(|source| ServerError::Bind { address, source })?;
        let address = listener.local_addr().map_err(|source| ServerError::Bind { address, source })?;
        let state = ServerState::new(self.worker.clone(), model_id.clone(), context_len, api_key);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(doppler_server::serve(listener, router(Arc::new(state)), async {
            let _ = stopped.await;
        }));
        tracing::info!(%address, model = %model_id, "the app's server is listening");
        Ok(RunningServer { url: format!("http://{address}/v1"), model_id, stop, task })
    }

    /// The model the app loaded last if it is on the GPU, else any model that is.
    fn served_model(&self) -> Option<(String, u32)> {
        let last = AppSettings::load(&self.db).ok().and_then(|settings| settings.last_model_id);
        let mut loaded: Vec<(String, u32)> = self
            .worker
            .model_states()
            .into_iter()
            .filter_map(|(model_id, state)| match state {
                ModelState::Loaded { info } => Some((model_id, info.context_len)),
                _ => None,
            })
            .collect();
        loaded.sort();
        let preferred = loaded.iter().position(|(model_id, _)| Some(model_id) == last.as_ref()).unwrap_or(0);
        (!loaded.is_empty()).then(|| loaded.swap_remove(preferred))
    }

    fn has_api_key(&self) -> Result<bool, ServerError> {
        Ok(self.db.setting(HAS_KEY_KEY)?.unwrap_or(false))
    }

    async fn api_key(&self) -> Result<Option<String>, ServerError> {
        if !self.has_api_key()? {
            return Ok(None);
        }
        Ok(off_runtime(&self.keys, |keys| keys.get(KEY_ACCOUNT)).await?)
    }
}

async fn stop(server: RunningServer) {
    let _ = server.stop.send(());
    let mut task = server.task;
    if tokio::time::timeout(STOP_GRACE, &mut task).await.is_err() {
        task.abort();
    }
    tracing::info!(url = %server.url, "the app's server stopped");
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use doppler_engine::EngineOptions;
    use serde_json::{json, Value};

    use super::*;
    use crate::core::{backends::MemoryKeyStore, engine::MAX_WAITING_REPLIES};

    const MODEL: &str = "tiny-llama3";

    struct Harness {
        _dir: tempfile::TempDir,
        server: ServerService,
        worker: Arc<EngineWorker>,
    }

    fn harness() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::open(&dir.path().join("db.sqlite3")).unwrap().database);
        let worker = Arc::new(EngineWorker::spawn(EngineOptions::default(), MAX_WAITING_REPLIES));
        let server = ServerService::new(db, worker.clone(), Arc::new(MemoryKeyStore::default()));
        Harness { _dir: dir, server, worker }
    }

    async fn load_tiny_model(worker: &Arc<EngineWorker>) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hf/llama3/model.gguf");
        let worker = worker.clone();
        tokio::task::spawn_blocking(move || {
            worker.load_and_wait(crate::core::engine::LoadRequest {
                model_id: MODEL.into(),
                path,
                context_len: Some(256),
            })
        })
        .await
        .unwrap()
        .expect("the tiny Llama 3 loads");
    }

    fn on(host: &str) -> ServerSettings {
        ServerSettings { enabled: true, host: host.into(), port: 0 }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn off_by_default_and_waits_for_a_model() {
        let harness = harness();
        let status = harness.server.status().await.unwrap();
        assert!(!status.settings.enabled);
        assert_eq!((status.settings.host.as_str(), status.settings.port), ("127.0.0.1", 8080));
        assert_eq!((status.url, status.has_api_key), (None, false));

        let status = harness.server.configure(on("127.0.0.1"), None).await.unwrap();
        assert_eq!(status.url, None);
        assert_eq!(status.error.as_deref(), Some("no model is loaded: the server starts once one is"));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn serves_the_apps_model_on_its_worker_until_switched_off() {
        let harness = harness();
        load_tiny_model(&harness.worker).await;
        let status = harness.server.configure(on("127.0.0.1"), None).await.unwrap();
        let url = status.url.expect("the server runs");
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"), "{url}");
        assert_eq!(status.model_id.as_deref(), Some(MODEL));

        let client = reqwest::Client::new();
        let models: Value = client.get(format!("{url}/models")).send().await.unwrap().json().await.unwrap();
        assert_eq!(models["data"][0]["id"], MODEL);
        let request =
            json!({ "model": MODEL, "messages": [{ "role": "user", "content": "Hi" }], "max_tokens": 4 });
        let response = client.post(format!("{url}/chat/completions")).json(&request).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let reply: Value = response.json().await.unwrap();
        assert!(reply["usage"]["completion_tokens"].as_u64().unwrap() > 0, "{reply}");

        let status = harness
            .server
            .configure(ServerSettings { enabled: false, ..on("127.0.0.1") }, None)
            .await
            .unwrap();
        assert_eq!(status.url, None);
        assert!(client.get(format!("{url}/models")).send().await.is_err(), "nothing listens any more");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn another_host_needs_a_key() {
        let harness = harness();
        load_tiny_model(&harness.worker).await;
        let status = harness.server.configure(on("0.0.0.0"), None).await.unwrap();
        assert_eq!(status.url, None);
        assert!(status.error.unwrap().contains("set an API key first"));
        assert!(harness
            .server
            .configure(on("localhost"), None)
            .await
            .unwrap()
            .error
            .unwrap()
            .contains("not an IP address"));

        let status = harness.server.configure(on("0.0.0.0"), Some("sk-local".into())).await.unwrap();
        assert!(status.has_api_key);
        let port = status
            .url
            .expect("the server runs")
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("/v1")
            .to_string();
        let models = format!("http://127.0.0.1:{port}/v1/models");
        let client = reqwest::Client::new();
        assert_eq!(client.get(&models).send().await.unwrap().status(), 401);
        assert_eq!(client.get(&models).bearer_auth("sk-local").send().await.unwrap().status(), 200);
        harness.server.stop().await;
    }
}
