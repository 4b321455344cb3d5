use tauri::State;

use super::{ServerSettings, ServerStatus};
use crate::core::app::{AppState, CommandError};

#[tauri::command]
pub async fn server_status(state: State<'_, AppState>) -> Result<ServerStatus, CommandError> {
    Ok(state.server.status().await?)
}

/// Saves the server's settings and starts, restarts or stops it to match. `api_key`: `None`
/// keeps the stored key, `""` removes it; it is kept in the keychain and never sent back.
#[tauri::command]
pub async fn configure_server(
    state: State<'_, AppState>,
    settings: ServerSettings,
    api_key: Option<String>,
) -> Result<ServerStatus, CommandError> {
    Ok(state.server.configure(settings, api_key).await?)
}
