//! What the Hub's listing endpoints answer, reduced to what DOPPLER uses.

use serde::{Deserialize, Serialize};

/// A kind of model a repository holds, as the Hub tags it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelFormat {
    /// GGUF files, pulled as they are.
    Gguf,
    /// A safetensors model, converted to RDRR.
    Safetensors,
}

impl ModelFormat {
    pub const ALL: [ModelFormat; 2] = [ModelFormat::Gguf, ModelFormat::Safetensors];

    /// Its tag on the Hub, which `/api/models?filter=` takes.
    pub fn tag(self) -> &'static str {
        match self {
            ModelFormat::Gguf => "gguf",
            ModelFormat::Safetensors => "safetensors",
        }
    }
}

/// One search result of `/api/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HubModel {
    /// `owner/name`.
    pub id: String,
    #[serde(default)]
    pub downloads: Option<u64>,
    #[serde(default)]
    pub likes: Option<u64>,
    #[serde(default, rename = "lastModified", skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// The formats it holds (the searches that found it): GGUF pulls, safetensors converts.
    #[serde(default)]
    pub formats: Vec<ModelFormat>,
}

/// One file of a repository's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoFile {
    /// The path inside the repository (`Q4_K_M/model-00001-of-00002.gguf`).
    pub path: String,
    pub size: u64,
    /// The sha256 the Hub stores for an LFS file (lowercase hex); plain git files have none.
    pub sha256: Option<String>,
}

impl RepoFile {
    /// The last component of `path`.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// An entry of `/api/models/{repo}/tree/{revision}`: `{"type": "file", "path", "size",
/// "oid", "lfs": {"oid", "size", "pointerSize"}}`; directories have `"type": "directory"`.
#[derive(Debug, Deserialize)]
pub(crate) struct TreeEntry {
    #[serde(rename = "type")]
    pub kind: String,
    pub path: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub lfs: Option<LfsPointer>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LfsPointer {
    /// The file's sha256 in lowercase hex.
    pub oid: String,
    pub size: u64,
}
