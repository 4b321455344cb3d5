use std::path::PathBuf;

use super::manifest::ManifestFile;

/// A finished download waiting to be installed, with the sha256 computed while writing it
/// (and already compared with its publisher's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedFile {
    pub path: PathBuf,
    /// Its name inside the installed model's directory.
    pub file_name: String,
    /// Lowercase hex.
    pub sha256: String,
    pub size: u64,
}

impl VerifiedFile {
    pub(crate) fn manifest_entry(&self) -> ManifestFile {
        ManifestFile { file_name: self.file_name.clone(), sha256: self.sha256.clone(), size: self.size }
    }
}
