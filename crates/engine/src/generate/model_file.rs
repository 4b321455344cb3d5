//! The part of loading that needs no GPU: the file parsed, the configuration checked against
//! its tensors and limits, the tokenizer built and the chat template probed. Doing all of it
//! before a device is opened makes refusing a bad or hostile file fast and cheap.

use std::path::{Path, PathBuf};

use super::GenerateError;
use crate::{
    gguf::GgufFile,
    model::ModelConfig,
    tokenizer::{ChatTemplate, Tokenizer},
};

/// A model file whose every part but the weights' upload has been read and checked.
pub struct ModelFile {
    pub(super) path: PathBuf,
    pub(super) gguf: GgufFile,
    pub(super) config: ModelConfig,
    pub(super) tokenizer: Tokenizer,
    pub(super) template: ChatTemplate,
}

impl ModelFile {
    /// Reads and checks `path`; nothing about the file is trusted.
    pub fn open(path: &Path) -> Result<ModelFile, GenerateError> {
        let gguf = GgufFile::open(path)?;
        let config = ModelConfig::from_gguf(&gguf)?;
        let tokenizer = Tokenizer::from_gguf(&gguf)?;
        if tokenizer.vocab_size() as u32 != config.vocab_size {
            return Err(GenerateError::InvalidModel(format!(
                "tokenizer has {} tokens but the embedding has {} rows",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        let template = ChatTemplate::for_model(&gguf, &tokenizer)?;
        Ok(ModelFile { path: path.to_path_buf(), gguf, config, tokenizer, template })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }
}
