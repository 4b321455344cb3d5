//! The manifest's JSON shape and its conversion from and to GGUF-style metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{RdrrProblem, RdrrWriteError};
use crate::gguf::{Metadata, MetadataArray, MetadataValue};

const ARCHITECTURE_KEY: &str = "general.architecture";
const CHAT_TEMPLATE_KEY: &str = "tokenizer.chat_template";
const TOKENIZER_PREFIX: &str = "tokenizer.";

/// `rdrr.json`. Metadata keeps GGUF's key names and value types (so the engine reads an
/// RDRR's configuration and tokenizer with the same code as a GGUF's), split by purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RdrrManifest {
    /// Always `"rdrr"`.
    pub format: String,
    pub format_version: u32,
    /// `general.architecture` (`llama`, `gemma3`, `qwen3`…).
    pub architecture: String,
    /// The architecture's hyperparameters: keys `<architecture>.*`.
    pub config: BTreeMap<String, MetadataValue>,
    /// The vocabulary, merges, scores, token types and special tokens: keys `tokenizer.*`
    /// but the chat template.
    pub tokenizer: BTreeMap<String, MetadataValue>,
    /// The Jinja chat template, where the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// Everything else: `general.*` (name, file type, license…) and other keys.
    #[serde(default)]
    pub metadata: BTreeMap<String, MetadataValue>,
    /// Offsets within a shard are multiples of this.
    pub alignment: u64,
    pub tensors: Vec<TensorEntry>,
    pub shards: Vec<ShardEntry>,
}

/// Where one tensor's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorEntry {
    pub name: String,
    /// ggml's type name (`Q4_K`, `Q8_0`, `F16`…): the block layout of the bytes.
    #[serde(rename = "type")]
    pub ty: String,
    /// Outermost first, as numpy and safetensors write it: the last is the contiguous row.
    pub shape: Vec<u64>,
    /// Index into `shards`: where the tensor starts. One larger than a shard goes on from
    /// the start of the following shards.
    pub shard: usize,
    /// Byte offset within that shard.
    pub offset: u64,
    pub bytes: u64,
}

/// One shard file beside the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEntry {
    /// A plain file name in the manifest's folder.
    pub file: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// The manifest sections metadata goes into.
pub(crate) struct Sections {
    pub architecture: String,
    pub config: BTreeMap<String, MetadataValue>,
    pub tokenizer: BTreeMap<String, MetadataValue>,
    pub chat_template: Option<String>,
    pub metadata: BTreeMap<String, MetadataValue>,
}

impl Sections {
    /// Sorts GGUF metadata into the manifest's sections. JSON has no NaN or infinity, so a
    /// non-finite float is refused rather than silently changed.
    pub(crate) fn from_metadata<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a MetadataValue)>,
    ) -> Result<Sections, RdrrWriteError> {
        let mut architecture = None;
        let mut chat_template = None;
        let mut rest = Vec::new();
        for (key, value) in entries {
            match (key, value) {
                (ARCHITECTURE_KEY, MetadataValue::String(name)) => architecture = Some(name.clone()),
                (CHAT_TEMPLATE_KEY, MetadataValue::String(text)) => chat_template = Some(text.clone()),
                _ => rest.push((key, value)),
            }
        }
        let architecture = architecture.ok_or(RdrrWriteError::NoArchitecture)?;
        let config_prefix = format!("{architecture}.");
        let mut sections = Sections {
            architecture,
            config: BTreeMap::new(),
            tokenizer: BTreeMap::new(),
            chat_template,
            metadata: BTreeMap::new(),
        };
        for (key, value) in rest {
            if !all_floats_finite(value) {
                return Err(RdrrWriteError::NonFiniteMetadata { key: key.to_string() });
            }
            let section = if key.starts_with(&config_prefix) {
                &mut sections.config
            } else if key.starts_with(TOKENIZER_PREFIX) {
                &mut sections.tokenizer
            } else {
                &mut sections.metadata
            };
            section.insert(key.to_string(), value.clone());
        }
        Ok(sections)
    }
}

impl RdrrManifest {
    /// The GGUF-style metadata the engine reads: every section's keys, checked against the
    /// limits GGUF files get and against the section each key belongs in.
    pub(crate) fn to_metadata(&self) -> Result<Metadata, RdrrProblem> {
        use crate::gguf::MAX_METADATA_ENTRIES;
        let count = self.config.len() + self.tokenizer.len() + self.metadata.len() + 2;
        if count as u64 > MAX_METADATA_ENTRIES {
            return Err(RdrrProblem::TooMany {
                what: "metadata entries",
                count: count as u64,
                limit: MAX_METADATA_ENTRIES,
            });
        }
        let config_prefix = format!("{}.", self.architecture);
        let misplaced =
            |key: &str, section: &'static str| RdrrProblem::MisplacedKey { key: key.to_string(), section };
        let mut metadata = Metadata::default();
        let mut insert = |key: &str, value: MetadataValue| {
            check_array_limits(key, &value)?;
            metadata.insert_new(key.to_string(), value).map_err(|key| RdrrProblem::DuplicateKey { key })
        };
        insert(ARCHITECTURE_KEY, MetadataValue::String(self.architecture.clone()))?;
        if let Some(template) = &self.chat_template {
            insert(CHAT_TEMPLATE_KEY, MetadataValue::String(template.clone()))?;
        }
        for (key, value) in &self.config {
            if !key.starts_with(&config_prefix) {
                return Err(misplaced(key, "config"));
            }
            insert(key, value.clone())?;
        }
        for (key, value) in &self.tokenizer {
            if !key.starts_with(TOKENIZER_PREFIX) || key == CHAT_TEMPLATE_KEY {
                return Err(misplaced(key, "tokenizer"));
            }
            insert(key, value.clone())?;
        }
        for (key, value) in &self.metadata {
            if key.starts_with(&config_prefix) || key.starts_with(TOKENIZER_PREFIX) || key == ARCHITECTURE_KEY
            {
                return Err(misplaced(key, "metadata"));
            }
            insert(key, value.clone())?;
        }
        Ok(metadata)
    }
}

/// Whether every float in the value is finite: JSON has no NaN or infinity.
fn all_floats_finite(value: &MetadataValue) -> bool {
    fn array_finite(array: &MetadataArray) -> bool {
        match array {
            MetadataArray::F32(v) => v.iter().all(|x| x.is_finite()),
            MetadataArray::F64(v) => v.iter().all(|x| x.is_finite()),
            MetadataArray::Array(v) => v.iter().all(array_finite),
            _ => true,
        }
    }
    match value {
        MetadataValue::F32(v) => v.is_finite(),
        MetadataValue::F64(v) => v.is_finite(),
        MetadataValue::Array(array) => array_finite(array),
        _ => true,
    }
}

/// Holds a manifest's arrays to the length and nesting limits a GGUF file's arrays get.
fn check_array_limits(key: &str, value: &MetadataValue) -> Result<(), RdrrProblem> {
    use crate::gguf::{MAX_ARRAY_DEPTH, MAX_ARRAY_LEN};
    fn check(key: &str, array: &MetadataArray, depth: usize) -> Result<(), RdrrProblem> {
        if depth >= MAX_ARRAY_DEPTH {
            return Err(RdrrProblem::NestingTooDeep { key: key.to_string(), max_depth: MAX_ARRAY_DEPTH });
        }
        let len = array.len() as u64;
        if len > MAX_ARRAY_LEN {
            return Err(RdrrProblem::ArrayTooLong { key: key.to_string(), len, limit: MAX_ARRAY_LEN });
        }
        match array {
            MetadataArray::Array(inner) => inner.iter().try_for_each(|array| check(key, array, depth + 1)),
            _ => Ok(()),
        }
    }
    match value {
        MetadataValue::Array(array) => check(key, array, 0),
        _ => Ok(()),
    }
}
