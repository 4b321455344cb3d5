//! DOPPLER's desktop app: a Tauri window over the engine, with conversations kept in SQLite.

pub mod core;

use std::time::Duration;

use doppler_engine::{store::ModelStore, EngineOptions};
use tauri::{AppHandle, Manager, RunEvent, WindowEvent};

use crate::core::app::{navigation_guard, AppPaths, AppState, StartupError};

/// How long quitting waits for a running generation to stop and save its reply.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Once the window is gone the process ends within this, whatever still runs (a download, a
/// server connection, a stuck GPU wait): a closed window never leaves a hung app behind. The
/// reply being generated was saved at least a second ago (crash-safe replies).
const QUIT_DEADLINE: Duration = Duration::from_secs(20);

fn exit_after_deadline() {
    std::thread::spawn(|| {
        std::thread::sleep(QUIT_DEADLINE);
        tracing::warn!(?QUIT_DEADLINE, "the app did not quit in time after its window closed; exiting");
        std::process::exit(0);
    });
}

fn focus_main_window(app: &AppHandle) {
    let Some(window) = app.get_webview_window("main") else { return };
    let shown = window.unminimize().and_then(|()| window.show()).and_then(|()| window.set_focus());
    if let Err(error) = shown {
        tracing::warn!(%error, "could not bring the window to the front for a second launch");
    }
}

pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DOPPLER_LOG").unwrap_or_else(|_| "info".into()),
        )
        .init();

    // First: a second launch hands over to the running app (its window comes to the front)
    // and exits here, inside `build`, before it opens the database the first one is using.
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| focus_main_window(app)))
        .plugin(navigation_guard())
        .on_window_event(|window, event| {
            if let WindowEvent::Destroyed = event {
                window.state::<AppState>().worker.cancel_owned_by(window.label());
                if window.label() == "main" {
                    exit_after_deadline();
                }
            }
        })
        .invoke_handler(tauri::generate_handler![
            core::app::commands::app_status,
            core::app::commands::app_settings,
            core::app::commands::save_app_settings,
            core::app::commands::open_link,
            core::conversations::commands::list_conversations,
            core::conversations::commands::create_conversation,
            core::conversations::commands::get_conversation,
            core::conversations::commands::rename_conversation,
            core::conversations::commands::delete_conversation,
            core::conversations::commands::update_conversation_settings,
            core::conversations::commands::select_branch,
            core::conversations::commands::export_conversation,
            core::chat::commands::send_message,
            core::chat::commands::regenerate_reply,
            core::chat::commands::edit_and_resend,
            core::chat::commands::stop_generation,
            core::chat::commands::generation_queue,
            core::models::commands::list_models,
            core::models::commands::load_model,
            core::models::commands::unload_model,
            core::models::commands::fetch_default_model,
            core::models::commands::import_model_file,
            core::models::commands::remove_model,
            core::models::commands::model_context,
            core::models::commands::set_model_context,
            core::profiler::commands::watch_profiler,
            core::profiler::commands::adapter_facts,
            core::profiler::commands::profiler_memory,
            core::profiler::commands::export_profile,
            core::downloads::commands::search_models,
            core::downloads::commands::repo_files,
            core::downloads::commands::recommended_models,
            core::downloads::commands::watch_downloads,
            core::downloads::commands::start_download,
            core::downloads::commands::pause_download,
            core::downloads::commands::resume_download,
            core::downloads::commands::cancel_download,
            core::conversions::commands::watch_conversions,
            core::conversions::commands::start_conversion,
            core::conversions::commands::cancel_conversion,
            core::conversions::commands::resume_conversion,
            core::conversions::commands::dismiss_conversion,
            core::backends::commands::list_remote_backends,
            core::backends::commands::add_remote_backend,
            core::backends::commands::remove_remote_backend,
            core::backends::commands::list_remote_models,
            core::server::commands::server_status,
            core::server::commands::configure_server,
        ])
        .build(tauri::generate_context!("../tauri.conf.json"))
        .expect("the app's configuration is valid");

    let state = match AppPaths::from_platform()
        .ok_or(StartupError::NoDataDirectory)
        .and_then(|paths| AppState::open(paths, ModelStore::default_location(), EngineOptions::default()))
    {
        Ok(state) => state,
        Err(error) => {
            tracing::error!(%error, "cannot start");
            rfd::MessageDialog::new()
                .set_level(rfd::MessageLevel::Error)
                .set_title("DOPPLER cannot start")
                .set_description(error.to_string())
                .show();
            std::process::exit(1);
        }
    };
    // The app's server, if the settings switch it on (it waits for a model to be loaded).
    let server = state.server.clone();
    tauri::async_runtime::spawn(async move { server.apply().await });
    // Managed before `run` creates the window, so every command finds it.
    app.manage(state);

    app.run(|app, event| {
        if let RunEvent::Exit = event {
            app.state::<AppState>().worker.shutdown(SHUTDOWN_GRACE);
            // Nothing left to wait for: background threads and runtimes do not hold the exit.
            std::process::exit(0);
        }
    });
}
