use std::{
    fs::File,
    io::{Read, Write},
    path::Path,
};

use serde::{Deserialize, Serialize};

use super::{
    checksum::parse_sha256,
    names::{check_model_name, is_plain_file_name},
    StoreError,
};

/// The file beside each installed model that describes it.
pub const MANIFEST_FILE: &str = "model.json";

/// A manifest is a few hundred bytes; anything far larger is not one of ours.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

/// What the store knows about an installed model (`<root>/models/<name>/model.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelManifest {
    pub name: String,
    /// The model file's name inside the model's directory.
    pub file_name: String,
    /// Lowercase hex.
    pub sha256: String,
    pub size: u64,
    /// Where it came from: `file:<path>` or `pip:<package>==<version>,…`.
    pub source: String,
    /// `general.architecture` of the GGUF (`gemma3`, `llama`…).
    pub architecture: Option<String>,
    /// llama.cpp's label for the quantization mix (`Q4_K_M`, `Q4_1`…).
    pub quantization: Option<String>,
    /// When it was installed, in seconds since the Unix epoch.
    pub added_unix_seconds: u64,
    /// The parts after the first of a split GGUF (`-00002-of-00003.gguf`…), in order, beside
    /// `file_name` (the first part).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split_parts: Vec<ManifestFile>,
}

/// One more file of an installed model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub file_name: String,
    /// Lowercase hex.
    pub sha256: String,
    pub size: u64,
}

impl ModelManifest {
    /// Reads and checks the manifest in `model_dir`, which must be named after the model.
    pub(crate) fn read(model_dir: &Path) -> Result<ModelManifest, StoreError> {
        let path = model_dir.join(MANIFEST_FILE);
        let file = File::open(&path).map_err(StoreError::io("reading", &path))?;
        let mut text = String::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(StoreError::io("reading", &path))?;
        let bad = |reason: String| StoreError::BadManifest { path: path.clone(), reason };
        if text.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(bad(format!("larger than {MAX_MANIFEST_BYTES} bytes")));
        }
        let manifest: ModelManifest = serde_json::from_str(&text).map_err(|error| bad(error.to_string()))?;
        check_model_name(&manifest.name).map_err(|error| bad(error.to_string()))?;
        if model_dir.file_name().is_none_or(|dir_name| dir_name != manifest.name.as_str()) {
            return Err(bad(format!(
                "names model '{}' but lies in another model's directory",
                manifest.name
            )));
        }
        for file in manifest.files() {
            if !is_plain_file_name(&file.file_name) {
                return Err(bad(format!("file name {:?} is not a plain file name", file.file_name)));
            }
            parse_sha256(&file.sha256).map_err(|error| bad(error.to_string()))?;
        }
        Ok(manifest)
    }

    /// The model's files: the model file, then the other parts of a split GGUF.
    pub fn files(&self) -> Vec<ManifestFile> {
        let first =
            ManifestFile { file_name: self.file_name.clone(), sha256: self.sha256.clone(), size: self.size };
        std::iter::once(first).chain(self.split_parts.iter().cloned()).collect()
    }

    /// Writes the manifest into `model_dir` and flushes it to disk.
    pub(crate) fn write(&self, model_dir: &Path) -> Result<(), StoreError> {
        let path = model_dir.join(MANIFEST_FILE);
        let mut json = serde_json::to_vec_pretty(self).expect("a manifest always serializes");
        json.push(b'\n');
        let mut file = File::create(&path).map_err(StoreError::io("creating", &path))?;
        file.write_all(&json).map_err(StoreError::io("writing", &path))?;
        file.sync_all().map_err(StoreError::io("syncing", &path))
    }
}
