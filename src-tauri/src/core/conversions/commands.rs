//! The conversions' commands: thin wrappers over [`super::ConversionService`].

use tauri::{ipc::Channel, State};

use super::Conversion;
use crate::core::app::{AppState, CommandError};

/// The conversions now; every later change of one comes over `on_change`.
#[tauri::command]
pub async fn watch_conversions(
    state: State<'_, AppState>,
    on_change: Channel<Conversion>,
) -> Result<Vec<Conversion>, CommandError> {
    Ok(state.conversions.watch(Box::new(move |conversion| {
        let _ = on_change.send(conversion.clone());
    })))
}

/// Starts converting the safetensors repository `repo` to `quant` (`Q4_K_M`, `Q8_0`, `F16`…).
#[tauri::command]
pub async fn start_conversion(
    state: State<'_, AppState>,
    repo: String,
    quant: String,
) -> Result<Conversion, CommandError> {
    Ok(state.conversions.start(&repo, &quant)?)
}

/// Stops conversion `id` (see [`super::ConversionService::cancel`]).
#[tauri::command]
pub async fn cancel_conversion(state: State<'_, AppState>, id: u64) -> Result<(), CommandError> {
    Ok(state.conversions.cancel(id)?)
}

/// Goes on with a cancelled or failed conversion (see [`super::ConversionService::resume`]).
#[tauri::command]
pub async fn resume_conversion(state: State<'_, AppState>, id: u64) -> Result<Conversion, CommandError> {
    Ok(state.conversions.resume(id)?)
}

/// Takes an ended conversion off the list.
#[tauri::command]
pub async fn dismiss_conversion(state: State<'_, AppState>, id: u64) -> Result<(), CommandError> {
    Ok(state.conversions.dismiss(id)?)
}
