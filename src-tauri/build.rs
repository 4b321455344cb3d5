/// Commands the webview may call; each gets an `allow-<name>` permission that the main
/// window's capability grants, and nothing else is reachable from the UI.
const COMMANDS: &[&str] = &[
    "app_status",
    "app_settings",
    "save_app_settings",
    "open_link",
    "list_conversations",
    "create_conversation",
    "get_conversation",
    "rename_conversation",
    "delete_conversation",
    "update_conversation_settings",
    "select_branch",
    "export_conversation",
    "send_message",
    "regenerate_reply",
    "edit_and_resend",
    "stop_generation",
    "generation_queue",
    "list_models",
    "load_model",
    "unload_model",
    "fetch_default_model",
    "import_model_file",
    "remove_model",
    "model_context",
    "set_model_context",
    "watch_profiler",
    "adapter_facts",
    "profiler_memory",
    "export_profile",
    "search_models",
    "repo_files",
    "recommended_models",
    "watch_downloads",
    "start_download",
    "pause_download",
    "resume_download",
    "cancel_download",
    "watch_conversions",
    "start_conversion",
    "list_remote_backends",
    "add_remote_backend",
    "remove_remote_backend",
    "list_remote_models",
    "server_status",
    "configure_server",
];

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    tauri_build::try_build(attributes).expect("tauri.conf.json and the capabilities are valid");
}
