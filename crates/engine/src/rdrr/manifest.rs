//! The manifest's JSON shape and its conversion from and to GGUF-style metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{RdrrProblem, RdrrWriteError};
use crate::gguf::{Metadata, MetadataArray, MetadataValue, StringArray};

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
    pub config: BTreeMap<String, ManifestValue>,
    /// The vocabulary, merges, scores, token types and special tokens: keys `tokenizer.*`
    /// but the chat template.
    pub tokenizer: BTreeMap<String, ManifestValue>,
    /// The Jinja chat template, where the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// Everything else: `general.*` (name, file type, license…) and other keys.
    #[serde(default)]
    pub metadata: BTreeMap<String, ManifestValue>,
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
    /// Index into `shards`.
    pub shard: usize,
    /// Byte offset within the shard.
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

/// A metadata value with its GGUF type, written `{"u32": 30}`, `{"string": "…"}`,
/// `{"array": {"string": […]}}`, so a round trip keeps every type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    String(String),
    Array(ManifestArray),
}

/// A typed metadata array (see [`ManifestValue`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    String(Vec<String>),
    Array(Vec<ManifestArray>),
}

/// The manifest sections metadata goes into.
pub(crate) struct Sections {
    pub architecture: String,
    pub config: BTreeMap<String, ManifestValue>,
    pub tokenizer: BTreeMap<String, ManifestValue>,
    pub chat_template: Option<String>,
    pub metadata: BTreeMap<String, ManifestValue>,
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
            let value = to_manifest_value(value)
                .ok_or_else(|| RdrrWriteError::NonFiniteMetadata { key: key.to_string() })?;
            let section = if key.starts_with(&config_prefix) {
                &mut sections.config
            } else if key.starts_with(TOKENIZER_PREFIX) {
                &mut sections.tokenizer
            } else {
                &mut sections.metadata
            };
            section.insert(key.to_string(), value);
        }
        Ok(sections)
    }
}

impl RdrrManifest {
    /// The GGUF-style metadata the engine reads: every section's keys, checked against the
    /// limits GGUF files get and against the section each key belongs in.
    pub(crate) fn to_metadata(&self) -> Result<Metadata, RdrrProblem> {
        use crate::gguf::{MAX_ARRAY_LEN, MAX_METADATA_ENTRIES};
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
            insert(key, from_manifest_value(key, value, MAX_ARRAY_LEN)?)?;
        }
        for (key, value) in &self.tokenizer {
            if !key.starts_with(TOKENIZER_PREFIX) || key == CHAT_TEMPLATE_KEY {
                return Err(misplaced(key, "tokenizer"));
            }
            insert(key, from_manifest_value(key, value, MAX_ARRAY_LEN)?)?;
        }
        for (key, value) in &self.metadata {
            if key.starts_with(&config_prefix) || key.starts_with(TOKENIZER_PREFIX) || key == ARCHITECTURE_KEY
            {
                return Err(misplaced(key, "metadata"));
            }
            insert(key, from_manifest_value(key, value, MAX_ARRAY_LEN)?)?;
        }
        Ok(metadata)
    }
}

fn to_manifest_value(value: &MetadataValue) -> Option<ManifestValue> {
    Some(match value {
        MetadataValue::U8(v) => ManifestValue::U8(*v),
        MetadataValue::I8(v) => ManifestValue::I8(*v),
        MetadataValue::U16(v) => ManifestValue::U16(*v),
        MetadataValue::I16(v) => ManifestValue::I16(*v),
        MetadataValue::U32(v) => ManifestValue::U32(*v),
        MetadataValue::I32(v) => ManifestValue::I32(*v),
        MetadataValue::U64(v) => ManifestValue::U64(*v),
        MetadataValue::I64(v) => ManifestValue::I64(*v),
        MetadataValue::F32(v) => ManifestValue::F32(finite(*v)?),
        MetadataValue::F64(v) => ManifestValue::F64(finite(*v)?),
        MetadataValue::Bool(v) => ManifestValue::Bool(*v),
        MetadataValue::String(v) => ManifestValue::String(v.clone()),
        MetadataValue::Array(array) => ManifestValue::Array(to_manifest_array(array)?),
    })
}

fn finite<T: Into<f64> + Copy>(value: T) -> Option<T> {
    value.into().is_finite().then_some(value)
}

fn all_finite<T: Into<f64> + Copy>(values: &[T]) -> Option<Vec<T>> {
    values.iter().all(|&v| v.into().is_finite()).then(|| values.to_vec())
}

fn to_manifest_array(array: &MetadataArray) -> Option<ManifestArray> {
    Some(match array {
        MetadataArray::U8(v) => ManifestArray::U8(v.clone()),
        MetadataArray::I8(v) => ManifestArray::I8(v.clone()),
        MetadataArray::U16(v) => ManifestArray::U16(v.clone()),
        MetadataArray::I16(v) => ManifestArray::I16(v.clone()),
        MetadataArray::U32(v) => ManifestArray::U32(v.clone()),
        MetadataArray::I32(v) => ManifestArray::I32(v.clone()),
        MetadataArray::U64(v) => ManifestArray::U64(v.clone()),
        MetadataArray::I64(v) => ManifestArray::I64(v.clone()),
        MetadataArray::F32(v) => ManifestArray::F32(all_finite(v)?),
        MetadataArray::F64(v) => ManifestArray::F64(all_finite(v)?),
        MetadataArray::Bool(v) => ManifestArray::Bool(v.clone()),
        MetadataArray::String(v) => ManifestArray::String(v.iter().map(str::to_string).collect()),
        MetadataArray::Array(v) => {
            ManifestArray::Array(v.iter().map(to_manifest_array).collect::<Option<_>>()?)
        }
    })
}

fn from_manifest_value(key: &str, value: &ManifestValue, max_len: u64) -> Result<MetadataValue, RdrrProblem> {
    Ok(match value {
        ManifestValue::U8(v) => MetadataValue::U8(*v),
        ManifestValue::I8(v) => MetadataValue::I8(*v),
        ManifestValue::U16(v) => MetadataValue::U16(*v),
        ManifestValue::I16(v) => MetadataValue::I16(*v),
        ManifestValue::U32(v) => MetadataValue::U32(*v),
        ManifestValue::I32(v) => MetadataValue::I32(*v),
        ManifestValue::U64(v) => MetadataValue::U64(*v),
        ManifestValue::I64(v) => MetadataValue::I64(*v),
        ManifestValue::F32(v) => MetadataValue::F32(*v),
        ManifestValue::F64(v) => MetadataValue::F64(*v),
        ManifestValue::Bool(v) => MetadataValue::Bool(*v),
        ManifestValue::String(v) => MetadataValue::String(v.clone()),
        ManifestValue::Array(array) => MetadataValue::Array(from_manifest_array(key, array, max_len, 0)?),
    })
}

fn from_manifest_array(
    key: &str,
    array: &ManifestArray,
    max_len: u64,
    depth: usize,
) -> Result<MetadataArray, RdrrProblem> {
    use crate::gguf::MAX_ARRAY_DEPTH;
    if depth >= MAX_ARRAY_DEPTH {
        return Err(RdrrProblem::NestingTooDeep { key: key.to_string(), max_depth: MAX_ARRAY_DEPTH });
    }
    let len = match array {
        ManifestArray::U8(v) => v.len(),
        ManifestArray::I8(v) => v.len(),
        ManifestArray::U16(v) => v.len(),
        ManifestArray::I16(v) => v.len(),
        ManifestArray::U32(v) => v.len(),
        ManifestArray::I32(v) => v.len(),
        ManifestArray::U64(v) => v.len(),
        ManifestArray::I64(v) => v.len(),
        ManifestArray::F32(v) => v.len(),
        ManifestArray::F64(v) => v.len(),
        ManifestArray::Bool(v) => v.len(),
        ManifestArray::String(v) => v.len(),
        ManifestArray::Array(v) => v.len(),
    } as u64;
    if len > max_len {
        return Err(RdrrProblem::ArrayTooLong { key: key.to_string(), len, limit: max_len });
    }
    Ok(match array {
        ManifestArray::U8(v) => MetadataArray::U8(v.clone()),
        ManifestArray::I8(v) => MetadataArray::I8(v.clone()),
        ManifestArray::U16(v) => MetadataArray::U16(v.clone()),
        ManifestArray::I16(v) => MetadataArray::I16(v.clone()),
        ManifestArray::U32(v) => MetadataArray::U32(v.clone()),
        ManifestArray::I32(v) => MetadataArray::I32(v.clone()),
        ManifestArray::U64(v) => MetadataArray::U64(v.clone()),
        ManifestArray::I64(v) => MetadataArray::I64(v.clone()),
        ManifestArray::F32(v) => MetadataArray::F32(v.clone()),
        ManifestArray::F64(v) => MetadataArray::F64(v.clone()),
        ManifestArray::Bool(v) => MetadataArray::Bool(v.clone()),
        ManifestArray::String(v) => MetadataArray::String(v.iter().collect::<StringArray>()),
        ManifestArray::Array(v) => MetadataArray::Array(
            v.iter()
                .map(|inner| from_manifest_array(key, inner, max_len, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
    })
}
