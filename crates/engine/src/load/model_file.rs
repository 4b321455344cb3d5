//! The part of loading that needs no GPU: the file parsed, the configuration checked against
//! its tensors and limits, the tokenizer built and the chat template probed. Doing all of it
//! before a device is opened makes refusing a bad or hostile file fast and cheap.

use std::path::{Path, PathBuf};

use crate::generate::GenerateError;
use crate::{
    gguf::GgufFile,
    model::{limits::MAX_CONTEXT, open_model_source, ModelConfig},
    tokenizer::{ChatTemplate, Tokenizer},
};

/// A model file whose every part but the weights' upload has been read and checked.
pub struct ModelFile {
    pub(crate) path: PathBuf,
    pub(crate) gguf: GgufFile,
    pub(crate) config: ModelConfig,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) template: ChatTemplate,
}

impl ModelFile {
    /// Reads and checks `path` (a GGUF file, or an RDRR model's `rdrr.json` or folder);
    /// nothing about the file is trusted.
    pub fn open(path: &Path) -> Result<ModelFile, GenerateError> {
        let gguf = open_model_source(path)?;
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

    /// The context a session will hold: `requested`, or the model's default
    /// (`ModelConfig::default_context`); refused over the limit before anything is sized from it.
    pub fn context_len(&self, requested: Option<u32>) -> Result<u32, GenerateError> {
        let context_len = requested.unwrap_or(self.config.default_context()).max(1);
        if context_len > MAX_CONTEXT {
            return Err(GenerateError::InvalidRequest(format!(
                "a context of {context_len} tokens is over the limit of {MAX_CONTEXT}"
            )));
        }
        Ok(context_len)
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }
}
