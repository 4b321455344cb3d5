use doppler_engine::ModelInfo;
use serde::Serialize;

use crate::core::engine::ModelState;

/// An installed model as the picker lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledModelView {
    /// The store name, used to load it.
    pub id: String,
    pub architecture: Option<String>,
    pub quantization: Option<String>,
    pub file_size: u64,
    /// One of the models DOPPLER ships with.
    pub is_default: bool,
    /// Absent: not loaded.
    pub state: Option<ModelState>,
}

/// A default model that is not installed yet.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultModelView {
    pub id: String,
    pub file_size: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelList {
    pub installed: Vec<InstalledModelView>,
    /// Smallest first: the first one is what a new user gets.
    pub available_defaults: Vec<DefaultModelView>,
}

/// Load progress for the picker's progress bar; `Cancelled` when an unload stopped the load.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum LoadEvent {
    Progress { fraction: f32, stage: String },
    Loaded { info: ModelInfo },
    Failed { reason: String },
    Cancelled,
}

/// Progress of fetching a default model: `total` is known once its file is being written.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchProgress {
    pub stage: String,
    pub written: u64,
    pub total: u64,
}
