use std::sync::Arc;

use doppler_engine::{store::ModelStore, EngineOptions};
use doppler_store::{download::RetryPolicy, hub::HubConfig};
use serde::Serialize;

use super::AppPaths;
use crate::core::{
    backends::{OsKeychain, RemoteBackends, SharedKeyStore},
    chat::ChatService,
    conversions::ConversionService,
    downloads::{adapter_memory, DownloadService},
    engine::{EngineWorker, MAX_WAITING_REPLIES},
    models::ModelCatalog,
    profiler::ProfilerService,
    server::ServerService,
    storage::{Database, OpenError},
};

/// Everything the commands share.
pub struct AppState {
    pub paths: AppPaths,
    pub db: Arc<Database>,
    pub worker: Arc<EngineWorker>,
    pub chat: ChatService,
    pub models: ModelCatalog,
    pub profiler: Arc<ProfilerService>,
    pub downloads: Arc<DownloadService>,
    pub conversions: Arc<ConversionService>,
    pub backends: Arc<RemoteBackends>,
    pub server: Arc<ServerService>,
    /// Told to the user once the window is up.
    pub notices: Vec<StartupNotice>,
}

/// Something the user must know about how the app started.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum StartupNotice {
    /// The conversation database was damaged; it was kept at `moved_to` and a new one started.
    DatabaseRecovered {
        moved_to: String,
        reason: String,
    },
    ModelStoreUnavailable {
        reason: String,
    },
    /// The last run ended while loading these models (it may have crashed loading them):
    /// they are not loaded at start.
    ModelsCrashedLoading {
        model_ids: Vec<String>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("this system has no data directory for DOPPLER's conversations")]
    NoDataDirectory,
    #[error(transparent)]
    Database(#[from] OpenError),
}

impl AppState {
    /// Opens the database and the model store and starts the engine worker.
    pub fn open(
        paths: AppPaths,
        store: Result<ModelStore, doppler_engine::store::StoreError>,
        engine: EngineOptions,
    ) -> Result<AppState, StartupError> {
        let opened = Database::open(&paths.database())?;
        let mut notices = Vec::new();
        if let Some(recovered) = opened.recovered {
            notices.push(StartupNotice::DatabaseRecovered {
                moved_to: recovered.moved_to.display().to_string(),
                reason: recovered.reason,
            });
        }
        let db = Arc::new(opened.database);
        // Replies the last run left streaming (it ended or was killed mid-reply) keep their
        // saved text, marked interrupted.
        if let Err(error) = db.mark_interrupted_replies() {
            tracing::warn!(%error, "could not mark interrupted replies");
        }
        match super::load_guard::models_that_crashed_loading(&db) {
            Ok(model_ids) if !model_ids.is_empty() => {
                tracing::warn!(?model_ids, "the last run ended while loading");
                notices.push(StartupNotice::ModelsCrashedLoading { model_ids });
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "could not read which models were loading"),
        }
        let worker = Arc::new(EngineWorker::spawn(engine, MAX_WAITING_REPLIES));
        let downloads = DownloadService::new(
            HubConfig::from_env(),
            store.as_ref().map(ModelStore::clone).map_err(ToString::to_string),
            paths.downloads_list(),
            RetryPolicy::default(),
            Box::new(adapter_memory),
        );
        // Downloads and conversions the last run was doing go on, from the bytes they have.
        downloads.resume_interrupted();
        let conversions = ConversionService::new(
            HubConfig::from_env(),
            store.as_ref().map(ModelStore::clone).map_err(ToString::to_string),
            paths.conversions_list(),
            RetryPolicy::default(),
        );
        conversions.resume_interrupted();
        let models = ModelCatalog::new(store, worker.clone());
        if let Some(reason) = models.unavailable_reason() {
            notices.push(StartupNotice::ModelStoreUnavailable { reason: reason.to_string() });
        }
        let profiler = Arc::new(ProfilerService::default());
        let keys: SharedKeyStore = Arc::new(OsKeychain);
        let backends = Arc::new(RemoteBackends::new(
            db.clone(),
            keys.clone(),
            tauri::async_runtime::handle().inner().clone(),
        ));
        Ok(AppState {
            paths,
            chat: ChatService::new(db.clone(), worker.clone())
                .with_profiler(profiler.clone())
                .with_remote_backends(backends.clone()),
            server: Arc::new(ServerService::new(db.clone(), worker.clone(), keys)),
            backends,
            profiler,
            db,
            worker,
            models,
            downloads,
            conversions,
            notices,
        })
    }
}
