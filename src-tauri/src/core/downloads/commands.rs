//! The model manager's commands: thin wrappers that run the Hub's blocking calls off the
//! async runtime.

use doppler_store::hub::HubModel;
use tauri::{ipc::Channel, AppHandle, Manager, State};

use super::{Download, Recommendation, RepoView};
use crate::core::app::{AppState, CommandError};

/// Runs `work` on the blocking pool with the app's download service.
async fn blocking<T: Send + 'static>(
    app: AppHandle,
    work: impl FnOnce(&AppState) -> Result<T, CommandError> + Send + 'static,
) -> Result<T, CommandError> {
    tauri::async_runtime::spawn_blocking(move || work(&app.state::<AppState>())).await?
}

#[tauri::command]
pub async fn search_models(app: AppHandle, query: String) -> Result<Vec<HubModel>, CommandError> {
    blocking(app, move |state| Ok(state.downloads.search(&query)?)).await
}

#[tauri::command]
pub async fn repo_files(app: AppHandle, repo: String) -> Result<RepoView, CommandError> {
    blocking(app, move |state| Ok(state.downloads.repo(&repo)?)).await
}

/// Curated chat models for this machine that the Hub has; empty offline.
#[tauri::command]
pub async fn recommended_models(app: AppHandle) -> Result<Vec<Recommendation>, CommandError> {
    blocking(app, |state| Ok(state.downloads.recommendations())).await
}

/// The downloads list now; every later change of a download comes over `on_change`.
#[tauri::command]
pub async fn watch_downloads(
    state: State<'_, AppState>,
    on_change: Channel<Download>,
) -> Result<Vec<Download>, CommandError> {
    Ok(state.downloads.watch(Box::new(move |download| {
        let _ = on_change.send(download.clone());
    })))
}

#[tauri::command]
pub async fn start_download(app: AppHandle, repo: String, choice: String) -> Result<Download, CommandError> {
    blocking(app, move |state| Ok(state.downloads.start(&repo, &choice)?)).await
}

#[tauri::command]
pub async fn pause_download(state: State<'_, AppState>, id: u64) -> Result<Download, CommandError> {
    Ok(state.downloads.pause(id)?)
}

#[tauri::command]
pub async fn resume_download(state: State<'_, AppState>, id: u64) -> Result<Download, CommandError> {
    Ok(state.downloads.resume(id)?)
}

/// Stops a download and deletes its partial files, or clears a finished one from the list.
#[tauri::command]
pub async fn cancel_download(app: AppHandle, id: u64) -> Result<(), CommandError> {
    blocking(app, move |state| Ok(state.downloads.cancel(id)?)).await
}
