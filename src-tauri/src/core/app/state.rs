use std::sync::Arc;

use doppler_engine::{store::ModelStore, EngineOptions};
use doppler_store::{download::RetryPolicy, hub::HubConfig};
use serde::Serialize;

use super::AppPaths;
use crate::core::{
    chat::ChatService,
    downloads::{adapter_memory, DownloadService},
    engine::{EngineWorker, MAX_WAITING_REPLIES},
    models::ModelCatalog,
    profiler::ProfilerService,
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
        let worker = Arc::new(EngineWorker::spawn(engine, MAX_WAITING_REPLIES));
        let downloads = DownloadService::new(
            HubConfig::from_env(),
            store.as_ref().map(ModelStore::clone).map_err(ToString::to_string),
            paths.downloads_list(),
            RetryPolicy::default(),
            Box::new(adapter_memory),
        );
        // Downloads the last run was doing go on, from the bytes they have.
        downloads.resume_interrupted();
        let models = ModelCatalog::new(store, worker.clone());
        if let Some(reason) = models.unavailable_reason() {
            notices.push(StartupNotice::ModelStoreUnavailable { reason: reason.to_string() });
        }
        let profiler = Arc::new(ProfilerService::default());
        Ok(AppState {
            paths,
            chat: ChatService::new(db.clone(), worker.clone()).with_profiler(profiler.clone()),
            profiler,
            db,
            worker,
            models,
            downloads,
            notices,
        })
    }
}
