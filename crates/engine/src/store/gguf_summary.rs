//! What `doppler models list` shows about a model file, read from its GGUF header or RDRR manifest.

use std::path::Path;

use crate::model::{open_model_source, ModelSourceError};

pub(crate) struct GgufSummary {
    pub architecture: Option<String>,
    pub quantization: Option<String>,
}

/// Parses the model (a GGUF header, or an RDRR manifest with its shards checked) and checks it is whole.
pub(crate) fn summarize(path: &Path) -> Result<GgufSummary, ModelSourceError> {
    let gguf = open_model_source(path)?;
    Ok(GgufSummary {
        architecture: gguf.architecture().ok().map(str::to_string),
        quantization: gguf.file_type_label(),
    })
}
