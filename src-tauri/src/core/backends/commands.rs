use tauri::State;

use super::{NewRemoteBackend, RemoteBackend, RemoteModels};
use crate::core::app::{AppState, CommandError};

#[tauri::command]
pub async fn list_remote_backends(state: State<'_, AppState>) -> Result<Vec<RemoteBackend>, CommandError> {
    Ok(state.backends.list()?)
}

/// Adds a backend; the key, if given, goes to the keychain and is never sent back.
#[tauri::command]
pub async fn add_remote_backend(
    state: State<'_, AppState>,
    backend: NewRemoteBackend,
) -> Result<RemoteBackend, CommandError> {
    Ok(state.backends.add(backend).await?)
}

#[tauri::command]
pub async fn remove_remote_backend(
    state: State<'_, AppState>,
    backend_id: String,
) -> Result<(), CommandError> {
    Ok(state.backends.remove(&backend_id).await?)
}

/// Every backend's models (or why they could not be listed), for the model picker.
#[tauri::command]
pub async fn list_remote_models(state: State<'_, AppState>) -> Result<Vec<RemoteModels>, CommandError> {
    Ok(state.backends.models().await?)
}
