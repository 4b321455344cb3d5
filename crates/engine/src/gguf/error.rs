use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong reading a GGUF file or querying what was read.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file's bytes do not form a valid GGUF file; `file` is the path, or `<memory>`.
    #[error("{file}: {problem}")]
    Malformed { file: String, problem: Malformation },
    #[error("metadata key '{key}' is {found}, expected {expected}")]
    MetadataType { key: String, expected: &'static str, found: String },
    #[error("metadata key '{key}' is missing")]
    MissingKey { key: String },
    #[error("unknown ggml type id {id}")]
    UnknownGgmlType { id: u32 },
    #[error("row length {row_len} is not a multiple of {type_name}'s block length {block_len}")]
    RowNotWholeBlocks { type_name: &'static str, row_len: u64, block_len: usize },
    #[error("{type_name} row of {row_len} elements is too large to address")]
    RowTooLarge { type_name: &'static str, row_len: u64 },
}

/// The part of the file a problem was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Header,
    Metadata,
    TensorInfo,
    Data,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Header => "header",
            Section::Metadata => "metadata",
            Section::TensorInfo => "tensor info",
            Section::Data => "tensor data",
        })
    }
}

/// Why a file's bytes are not a valid GGUF file. Every variant names where the problem is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Malformation {
    #[error("not a GGUF file (magic bytes {found:02x?}, expected \"GGUF\")")]
    BadMagic { found: Vec<u8> },
    #[error("unsupported GGUF version {version} (only versions 2 and 3 are supported{hint})")]
    UnsupportedVersion { version: u32, hint: &'static str },
    #[error(
        "{section} truncated reading {what}: needs {needed} bytes at offset {offset}, file size {file_size}"
    )]
    Truncated { section: Section, what: String, offset: u64, needed: u64, file_size: u64 },
    #[error(
        "{section}: {what} count {count} cannot fit in the {remaining} bytes left after offset {offset}"
    )]
    CountTooLarge { section: Section, what: String, count: u64, offset: u64, remaining: u64 },
    #[error("{section}: {what} count {count} is over the limit of {limit}")]
    CountOverLimit { section: Section, what: String, count: u64, limit: u64 },
    #[error("{section}: {what} is not valid UTF-8 (at offset {offset})")]
    InvalidUtf8 { section: Section, what: String, offset: u64 },
    #[error("metadata key '{key}': unknown value type id {id}")]
    UnknownValueType { key: String, id: u32 },
    #[error("metadata key '{key}': arrays nested deeper than {max_depth} levels")]
    NestingTooDeep { key: String, max_depth: usize },
    #[error("metadata key '{key}': bool value {value} is neither 0 nor 1 (at offset {offset})")]
    InvalidBool { key: String, value: u8, offset: u64 },
    #[error("metadata key '{key}' appears twice")]
    DuplicateKey { key: String },
    #[error("metadata key 'general.alignment': {value} is not a power of two")]
    BadAlignment { value: u64 },
    #[error("metadata key 'general.alignment': {0}")]
    AlignmentType(String),
    #[error("tensor '{tensor}' appears twice")]
    DuplicateTensor { tensor: String },
    #[error("tensor '{tensor}' has {n_dims} dimensions (1 to 4 allowed)")]
    DimensionCount { tensor: String, n_dims: u32 },
    #[error("tensor '{tensor}' has a zero dimension {dims:?}")]
    ZeroDimension { tensor: String, dims: Vec<u64> },
    #[error("tensor '{tensor}': size of {type_name} tensor with dims {dims:?} overflows")]
    SizeOverflow { tensor: String, type_name: &'static str, dims: Vec<u64> },
    #[error("tensor '{tensor}': unknown ggml type id {id}")]
    UnknownTensorType { tensor: String, id: u32 },
    #[error(
        "tensor '{tensor}': row length {row_len} is not a multiple of {type_name}'s block length {block_len}"
    )]
    RowNotWholeBlocks { tensor: String, type_name: &'static str, row_len: u64, block_len: usize },
    #[error("tensor '{tensor}': data offset {offset} is not a multiple of the alignment {alignment}")]
    MisalignedTensor { tensor: String, offset: u64, alignment: u64 },
    #[error("tensor '{tensor}': data offset {offset} overflows when added to the data section start")]
    DataOffsetOverflow { tensor: String, offset: u64 },
    #[error(
        "tensors '{first}' and '{second}' overlap (the second starts at offset {offset}, inside the first)"
    )]
    OverlappingTensors { first: String, second: String, offset: u64 },
    #[error("tensor '{tensor}' data [offset {offset}, {n_bytes} bytes] extends past end of file (size {file_size})")]
    TensorPastEnd { tensor: String, offset: u64, n_bytes: u64, file_size: u64 },
}
