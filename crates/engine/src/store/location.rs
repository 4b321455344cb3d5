use std::path::PathBuf;

use super::StoreError;

/// The environment variable that overrides where the store lives.
pub const HOME_ENV: &str = "DOPPLER_HOME";

/// `DOPPLER_HOME` if set, else the platform's data directory for DOPPLER
/// (`~/.local/share/doppler` on Linux).
pub fn default_root() -> Result<PathBuf, StoreError> {
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    directories::ProjectDirs::from("dev", "doppler", "doppler")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .ok_or(StoreError::NoDataDirectory)
}
