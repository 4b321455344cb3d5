use serde::{Deserialize, Serialize};

/// What a conversion is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConversionStatus {
    /// Fetching the repository's files.
    Downloading,
    /// Quantizing and writing the RDRR model.
    Converting,
    /// Installed as `Conversion::model_id`.
    Done,
    /// Stopped by an error; `resume` tries again from the files downloaded so far.
    Failed,
    /// Stopped by the user: nothing installed, the downloads kept for `resume`.
    Cancelled,
}

impl ConversionStatus {
    /// Whether a thread is (or should be) working on it.
    pub fn is_active(self) -> bool {
        matches!(self, ConversionStatus::Downloading | ConversionStatus::Converting)
    }
}

/// A conversion in the list, as the UI shows it and as `conversions.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversion {
    pub id: u64,
    /// The Hub repository, `owner/name` or `owner/name@revision`.
    pub repo: String,
    /// The quantization picked (`Q4_K_M`…).
    pub quant: String,
    pub status: ConversionStatus,
    /// Bytes of the current step done, of `total`: downloaded, then converted.
    pub done: u64,
    pub total: u64,
    /// The installed model, once done.
    pub model_id: Option<String>,
    /// Why it failed, what a download retries after, or that it resumed after a restart.
    pub message: Option<String>,
}
