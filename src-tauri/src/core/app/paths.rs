use std::path::PathBuf;

use directories::ProjectDirs;

/// Where the app keeps its files: the platform's data directory for DOPPLER (on Linux
/// `$XDG_DATA_HOME/doppler`), shared with the model store unless `DOPPLER_HOME` moves that.
#[derive(Debug, Clone)]
pub struct AppPaths {
    pub data_dir: PathBuf,
}

impl AppPaths {
    pub fn from_platform() -> Option<AppPaths> {
        ProjectDirs::from("dev", "doppler", "doppler")
            .map(|dirs| AppPaths { data_dir: dirs.data_dir().to_path_buf() })
    }

    pub fn database(&self) -> PathBuf {
        self.data_dir.join("conversations.sqlite3")
    }

    /// The model manager's downloads, kept across restarts.
    pub fn downloads_list(&self) -> PathBuf {
        self.data_dir.join("downloads.json")
    }

    /// The model manager's conversions, kept across restarts.
    pub fn conversions_list(&self) -> PathBuf {
        self.data_dir.join("conversions.json")
    }
}
