//! Where a model's metadata, tensor table and tensor bytes come from: one GGUF file, or an
//! RDRR manifest with its shards. Both are read into the same view ([`GgufFile`]), so the
//! configuration, tokenizer, chat template and weight upload never know which it was.

use std::path::Path;

use crate::{
    gguf::{GgufError, GgufFile},
    rdrr::{is_rdrr_path, open_rdrr, RdrrError, ShardCheck},
};

/// Why a model file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelSourceError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error(transparent)]
    Rdrr(#[from] RdrrError),
}

/// Opens the model at `path`: an RDRR model where `path` is an `rdrr.json` or a folder
/// holding one (its shards' sizes checked, not their sha256s: see [`ShardCheck`]), else a
/// GGUF file. Nothing in either is trusted.
pub fn open_model_source(path: &Path) -> Result<GgufFile, ModelSourceError> {
    if is_rdrr_path(path) {
        Ok(open_rdrr(path, ShardCheck::Size)?)
    } else {
        Ok(GgufFile::open(path)?)
    }
}
