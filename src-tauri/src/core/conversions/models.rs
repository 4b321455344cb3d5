use serde::Serialize;

/// What a conversion is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ConversionStatus {
    /// Fetching the repository's files.
    Downloading,
    /// Quantizing and writing the RDRR model.
    Converting,
    /// Installed as `Conversion::model_id`.
    Done,
    Failed,
    /// Stopped by the user: nothing installed, the downloads kept for the next try.
    Cancelled,
}

/// A conversion in the list, as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversion {
    pub id: u64,
    pub repo: String,
    /// The quantization picked (`Q4_K_M`…).
    pub quant: String,
    pub status: ConversionStatus,
    /// Bytes of the current step done, of `total`: downloaded, then converted.
    pub done: u64,
    pub total: u64,
    /// The installed model, once done.
    pub model_id: Option<String>,
    /// Why it failed, or what a download retries after.
    pub message: Option<String>,
}
