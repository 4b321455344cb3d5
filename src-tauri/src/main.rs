// No console window on Windows in release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    doppler_engine::tokenizer::sandbox_chat_templates();
    doppler_app::run();
}
