use std::sync::Arc;

use tauri::{ipc::Channel, State, WebviewWindow};

use super::{
    chrome_trace, AdapterFacts, ExportFormat, MemoryView, ProfileExport, ProfilerEvent, ProfilerEventSink,
};
use crate::core::app::{AppState, CommandError};

/// The profiler's events go to the view over its channel.
struct ChannelSink(Channel<ProfilerEvent>);

impl ProfilerEventSink for ChannelSink {
    fn send(&self, event: &ProfilerEvent) {
        // Fails only once the webview is gone; the log keeps the event for the next view.
        if let Err(error) = self.0.send(event.clone()) {
            tracing::debug!(%error, "a profiler event found no webview");
        }
    }
}

/// Streams the profiler's events to `on_event` from now on; returns the kept ones before them.
#[tauri::command]
pub async fn watch_profiler(
    state: State<'_, AppState>,
    on_event: Channel<ProfilerEvent>,
) -> Result<Vec<ProfilerEvent>, CommandError> {
    Ok(state.profiler.watch(Arc::new(ChannelSink(on_event))))
}

/// The adapter the engine opened; `None` until the first model loads.
#[tauri::command]
pub async fn adapter_facts(state: State<'_, AppState>) -> Result<Option<AdapterFacts>, CommandError> {
    Ok(state.worker.gpu().map(|gpu| AdapterFacts::of(&gpu)))
}

/// The GPU's memory tier and budget, and what the loaded models take of it.
#[tauri::command]
pub async fn profiler_memory(state: State<'_, AppState>) -> Result<Option<MemoryView>, CommandError> {
    Ok(state.worker.gpu().map(|gpu| MemoryView::of(&gpu, &state.worker.model_states())))
}

/// Saves the kept profiles where the user picks: all of it as JSON, or the kernel timings as
/// a Chrome trace (Perfetto opens it). `false` when the dialog was cancelled.
#[tauri::command]
pub async fn export_profile(
    state: State<'_, AppState>,
    window: WebviewWindow,
    format: ExportFormat,
) -> Result<bool, CommandError> {
    let (file_name, filter) = match format {
        ExportFormat::Json => ("doppler-profile.json", "Profile (JSON)"),
        ExportFormat::ChromeTrace => ("doppler-trace.json", "Chrome trace (Perfetto)"),
    };
    let contents = match format {
        ExportFormat::Json => {
            let gpu = state.worker.gpu();
            serde_json::to_vec_pretty(&ProfileExport {
                adapter: gpu.as_deref().map(AdapterFacts::of),
                memory: gpu.as_deref().map(|gpu| MemoryView::of(gpu, &state.worker.model_states())),
                summary: state.profiler.summary(),
                events: state.profiler.events(),
                steps: state.profiler.recorded_steps(),
            })?
        }
        ExportFormat::ChromeTrace => serde_json::to_vec(&chrome_trace(&state.profiler.recorded_steps()))?,
    };
    let dialog = rfd::AsyncFileDialog::new()
        .set_title("Export profile")
        .set_file_name(file_name)
        .add_filter(filter, &["json"])
        .set_parent(&window);
    let Some(file) = dialog.save_file().await else { return Ok(false) };
    file.write(&contents).await?;
    Ok(true)
}
