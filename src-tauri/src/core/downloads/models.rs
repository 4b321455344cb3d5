use doppler_engine::gpu::MemoryTier;
use doppler_store::{hub::RepoFile, quant::AssessedChoice};
use serde::{Deserialize, Serialize};

/// What a download is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DownloadStatus {
    Downloading,
    /// Stopped by the user; its partial files stay for `resume`.
    Paused,
    /// Checked and being moved into the model store.
    Installing,
    /// Installed as `Download::model_id`.
    Done,
    Failed,
}

impl DownloadStatus {
    /// Whether a thread is (or should be) working on it.
    pub fn is_active(self) -> bool {
        matches!(self, DownloadStatus::Downloading | DownloadStatus::Installing)
    }
}

/// One file of a download, as the Hub listed it when the download started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadFile {
    pub path: String,
    pub size: u64,
    pub sha256: Option<String>,
}

impl From<&RepoFile> for DownloadFile {
    fn from(file: &RepoFile) -> Self {
        DownloadFile { path: file.path.clone(), size: file.size, sha256: file.sha256.clone() }
    }
}

impl From<&DownloadFile> for RepoFile {
    fn from(file: &DownloadFile) -> Self {
        RepoFile { path: file.path.clone(), size: file.size, sha256: file.sha256.clone() }
    }
}

/// A download in the list, as the UI shows it and as `downloads.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Download {
    pub id: u64,
    pub repo: String,
    pub revision: String,
    /// The model's name in the repository (a file, or a split model without its part suffix).
    pub choice: String,
    /// The quantization label, else the file name.
    pub label: String,
    pub files: Vec<DownloadFile>,
    pub total: u64,
    pub done: u64,
    pub bytes_per_second: f64,
    pub eta_seconds: Option<f64>,
    pub status: DownloadStatus,
    /// The installed model, once done.
    pub model_id: Option<String>,
    /// Why it failed, or what it is retrying after.
    pub message: Option<String>,
}

/// The adapter's memory as the fit badges judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineMemory {
    /// Bytes a model may take; `None` where nothing tells.
    pub budget: Option<u64>,
    pub tier: Option<MemoryTier>,
    /// Keys and values are stored as f16 (the adapter has shader-f16).
    pub kv_f16: bool,
}

/// A repository's GGUF models with their estimated footprints and fit badges.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoView {
    pub repo: String,
    pub memory: MachineMemory,
    /// The context the footprints are estimated for.
    pub context_len: u32,
    /// Smallest first; a choice's fields are in the store crate's snake_case.
    pub choices: Vec<AssessedChoice>,
    /// The repository holds a safetensors model that converts to RDRR.
    pub convertible: bool,
}

/// A curated chat model the Hub has, for this machine.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    pub title: String,
    pub repo: String,
    pub choice: AssessedChoice,
}
