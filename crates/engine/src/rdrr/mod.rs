//! RDRR: a model as a JSON manifest plus shards of raw tensor data.
//!
//! The manifest (`rdrr.json`) holds the format version, the architecture and its
//! configuration, the tokenizer, the chat template, a tensor table (name, type, shape, shard,
//! offset, byte length) and the shard list (file name, size, sha256). Shards hold at most
//! [`MAX_SHARD_BYTES`] each, every tensor at an aligned offset, in exactly the block layouts
//! of GGUF (ggml's), so loading is a straight copy into GPU buffers: an RDRR made from a GGUF
//! gives the engine the same bytes as that GGUF.
//!
//! A tensor that fits a shard lies whole in one. One larger than a shard (Qwen2.5 7B's F16
//! token embedding, 1.09 GB; Gemma 3 4B's in F16, 27B's in Q8_0) spans consecutive shards:
//! its entry names the shard and offset of its first byte, its bytes run to the end of that
//! shard and go on from the start of the next ones until `bytes` are found, and each shard it
//! leaves holds whole rows of it, so the loader uploads each piece as rows of its own without
//! copying the tensor on the host. A manifest without such tensors reads as before (the
//! layout needs no new field); a span that leaves a shard mid-row, runs past the last shard
//! or over another tensor is refused, naming the tensor.
//!
//! Shards can be fetched, verified and cached one at a time, and a model converted from
//! safetensors needs no GGUF step. The reader treats the manifest as untrusted: sizes,
//! counts and offsets are checked against limits and the shards actually present. Shards are
//! hashed where they are made or fetched (the writer and the downloads compute each sha256 as
//! the bytes go by, the store records them, `doppler models verify` checks them again), so a
//! load checks each shard's size only ([`ShardCheck::Size`]) unless its caller asks for the
//! sha256s too ([`ShardCheck::Sha256`]): hashing costs seconds per gigabyte on every load.

mod error;
mod manifest;
mod reader;
mod writer;

#[cfg(test)]
mod tests;

pub use error::{RdrrError, RdrrProblem, RdrrWriteError};
pub use manifest::{RdrrManifest, ShardEntry, TensorEntry};
pub use reader::{open_rdrr, ShardCheck};
pub use writer::{RdrrWriter, WrittenFile, WrittenRdrr};

/// The manifest's file name inside an RDRR folder.
pub const MANIFEST_FILE: &str = "rdrr.json";
/// `format` in every manifest.
pub const FORMAT_NAME: &str = "rdrr";
/// The manifest layout this reader and writer speak.
pub const FORMAT_VERSION: u32 = 1;
/// Shards stay under this size, so each can be downloaded, hashed and cached on its own.
pub const MAX_SHARD_BYTES: u64 = 1 << 30;
/// Tensor offsets within a shard are multiples of this: wgpu's largest storage-buffer
/// offset alignment, so a shard can be bound at a tensor's offset directly.
pub const TENSOR_ALIGNMENT: u64 = 256;
/// A Gemma 3 manifest (262,144 tokens with scores and types) is about 12 MB of JSON.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
/// 1,024 shards of 1 GiB: far past any model a desktop runs.
pub const MAX_SHARDS: usize = 1024;

/// Whether `path` names an RDRR model: its manifest file, or a folder holding one.
pub fn is_rdrr_path(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|name| name == MANIFEST_FILE) || path.join(MANIFEST_FILE).is_file()
}
