//! What the Hub's listing endpoints answer, reduced to what DOPPLER uses.

use serde::{Deserialize, Serialize};

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
