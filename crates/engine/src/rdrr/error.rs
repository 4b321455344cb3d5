use std::path::PathBuf;

use crate::gguf::Malformation;

/// Why an RDRR model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RdrrError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the manifest is {size} bytes, over the limit of {limit}", path.display())]
    ManifestTooLarge { path: PathBuf, size: u64, limit: u64 },
    #[error("{}: the manifest is not valid RDRR JSON: {source}", path.display())]
    ManifestJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: format is {found:?}, expected \"rdrr\"", path.display())]
    NotRdrr { path: PathBuf, found: String },
    #[error("{}: RDRR format version {version} is not supported (this build reads version {supported})", path.display())]
    UnsupportedVersion { path: PathBuf, version: u32, supported: u32 },
    #[error("{}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: RdrrProblem },
    #[error("shard {}: {actual} bytes on disk, the manifest says {expected}", path.display())]
    ShardSize { path: PathBuf, expected: u64, actual: u64 },
    #[error("shard {}: checksum mismatch: sha256 is {actual}, the manifest says {expected}", path.display())]
    ShardChecksum { path: PathBuf, expected: String, actual: String },
}

/// What is wrong inside a manifest; every variant names the key, tensor or shard at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RdrrProblem {
    #[error("{count} {what}, over the limit of {limit}")]
    TooMany { what: &'static str, count: u64, limit: u64 },
    #[error("alignment {value} is not a power of two from 32 to 65536")]
    BadAlignment { value: u64 },
    #[error("shard file {file:?} is not a plain file name")]
    ShardName { file: String },
    #[error("shard file {file:?} is listed twice")]
    DuplicateShard { file: String },
    #[error("shard {file:?} claims {size} bytes, over the shard limit of {limit}")]
    ShardTooLarge { file: String, size: u64, limit: u64 },
    #[error("shard {file:?} is empty")]
    EmptyShard { file: String },
    #[error("shard {file:?}: sha256 {value:?} is not 64 lowercase hex digits")]
    BadChecksum { file: String, value: String },
    #[error("metadata key '{key}' does not belong in the {section} section")]
    MisplacedKey { key: String, section: &'static str },
    #[error("metadata key '{key}' appears twice")]
    DuplicateKey { key: String },
    #[error("metadata array '{key}' has {len} elements, over the limit of {limit}")]
    ArrayTooLong { key: String, len: u64, limit: u64 },
    #[error("metadata array '{key}' nests deeper than {max_depth}")]
    NestingTooDeep { key: String, max_depth: usize },
    #[error("tensor '{tensor}' is listed twice")]
    DuplicateTensor { tensor: String },
    #[error("tensor '{tensor}' has {n_dims} dimensions (1 to 4 are allowed)")]
    DimensionCount { tensor: String, n_dims: usize },
    #[error("tensor '{tensor}' has unknown type {ty:?}")]
    UnknownType { tensor: String, ty: String },
    #[error(transparent)]
    Shape(#[from] Malformation),
    #[error("tensor '{tensor}': {ty} of shape {shape:?} takes {expected} bytes, the manifest says {stated}")]
    ByteLength { tensor: String, ty: &'static str, shape: Vec<u64>, expected: u64, stated: u64 },
    #[error("tensor '{tensor}' is in shard {shard}, but there are {shards} shards")]
    NoSuchShard { tensor: String, shard: usize, shards: usize },
    #[error("tensor '{tensor}': offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned { tensor: String, offset: u64, alignment: u64 },
    #[error("tensor '{tensor}': offset {offset} is past the end of shard {shard:?} ({shard_size} bytes)")]
    PastShardEnd { tensor: String, shard: String, offset: u64, shard_size: u64 },
    #[error("tensor '{tensor}': its {bytes} bytes from offset {offset} of shard {shard:?} run {missing} bytes past the end of the last shard")]
    PastLastShard { tensor: String, shard: String, offset: u64, bytes: u64, missing: u64 },
    #[error("tensor '{tensor}' continues past the end of shard {shard:?} after {piece} of its bytes, which is not a whole number of its {row_bytes}-byte rows")]
    SplitMidRow { tensor: String, shard: String, piece: u64, row_bytes: u64 },
    #[error("tensors '{first}' and '{second}' overlap in shard {shard:?}")]
    Overlap { first: String, second: String, shard: String },
}

/// Why an RDRR model could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RdrrWriteError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the metadata has no general.architecture")]
    NoArchitecture,
    #[error("metadata key '{key}' holds a NaN or infinite number, which JSON cannot hold")]
    NonFiniteMetadata { key: String },
    #[error("tensor '{tensor}' is added twice")]
    DuplicateTensor { tensor: String },
    #[error("tensor '{tensor}': {source}")]
    Shape {
        tensor: String,
        #[source]
        source: Malformation,
    },
    #[error("tensor '{tensor}': one row takes {row_bytes} bytes, more than one shard may hold ({limit})")]
    RowTooLarge { tensor: String, row_bytes: u64, limit: u64 },
    #[error("tensor '{tensor}': {written} bytes were written, its type and shape take {expected}")]
    WrongLength { tensor: String, expected: u64, written: u64 },
}
