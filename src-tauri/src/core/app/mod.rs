//! The app around the services: where its files live, its state, its settings, startup
//! notices, the crash-loop guard on model loads, the guard that keeps the webview on the app, and the few commands that belong
//! to no domain (opening a link).

mod command_error;
pub mod commands;
pub mod load_guard;
mod navigation;
mod paths;
mod settings;
mod state;

pub use command_error::CommandError;
pub use navigation::navigation_guard;
pub use paths::AppPaths;
pub use settings::{AppSettings, Theme};
pub use state::{AppState, StartupError, StartupNotice};
