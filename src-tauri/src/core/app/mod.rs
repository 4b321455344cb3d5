//! The app around the services: where its files live, its state, its settings, startup
//! notices, and the few commands that belong to no domain (opening a link).

pub mod commands;
mod command_error;
mod paths;
mod settings;
mod state;

pub use command_error::CommandError;
pub use paths::AppPaths;
pub use settings::{AppSettings, Theme};
pub use state::{AppState, StartupError, StartupNotice};
