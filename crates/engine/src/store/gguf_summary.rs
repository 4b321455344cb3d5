//! What `doppler models list` shows about a model file, read from its GGUF header.

use std::path::Path;

use crate::gguf::{GgufError, GgufFile};

pub(crate) struct GgufSummary {
    pub architecture: Option<String>,
    pub quantization: Option<String>,
}

/// Parses the file's header (the tensor data stays unread) and checks it is a whole GGUF file.
pub(crate) fn summarize(path: &Path) -> Result<GgufSummary, GgufError> {
    let gguf = GgufFile::open(path)?;
    Ok(GgufSummary {
        architecture: gguf.architecture().ok().map(str::to_string),
        quantization: gguf.file_type_label(),
    })
}
