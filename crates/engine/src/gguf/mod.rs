//! GGUF (versions 2 and 3) reading and writing.
//!
//! The reader treats files as untrusted: every count, length, offset and size is checked
//! against the bytes actually present before anything is allocated or sliced, and every
//! error names the file and the key, tensor or offset at fault.

mod cursor;
mod error;
mod file;
mod file_type;
mod ggml_type;
mod metadata;
mod tensor_bytes;
mod writer;

#[cfg(test)]
mod real_model_tests;
#[cfg(test)]
mod robustness_tests;
/// How every test finds the default models and fixtures (tests/support); the unit tests use a
/// part of it.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../../../tests/support/models.rs"]
pub(crate) mod test_models;

pub use error::{GgufError, Malformation, Section};
pub(crate) use file::{tensor_byte_size, ShardRange, MAX_ARRAY_DEPTH, MAX_DIMS};
pub use file::{GgufFile, TensorInfo, MAX_ARRAY_LEN, MAX_METADATA_ENTRIES, MAX_TENSORS};
pub use ggml_type::GgmlType;
pub use metadata::{Metadata, MetadataArray, MetadataValue, StringArray};
pub use tensor_bytes::TensorBytes;
pub use writer::{GgufWriteError, GgufWriter};
