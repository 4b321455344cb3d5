use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use super::cursor::Cursor;
use super::error::{GgufError, Malformation, Section};
use super::ggml_type::GgmlType;
use super::metadata::{Metadata, MetadataArray, MetadataValue, StringArray, ValueType};
use super::tensor_bytes::TensorBytes;

pub(crate) const GGUF_MAGIC: &[u8; 4] = b"GGUF";
pub(crate) const DEFAULT_ALIGNMENT: u64 = 32;
pub(crate) const ALIGNMENT_KEY: &str = "general.alignment";
pub(crate) const MAX_DIMS: u32 = 4;
/// Nested metadata arrays (arrays of arrays) deeper than this are refused, which also bounds
/// the parser's recursion.
pub(crate) const MAX_ARRAY_DEPTH: usize = 4;
/// Real models have a few dozen metadata keys; the bound keeps a file of millions of tiny
/// entries from costing many times its size in maps and strings.
pub const MAX_METADATA_ENTRIES: u64 = 65_536;
/// 512 layers (llama.cpp's limit) of a few dozen tensors each, with room for unmerged experts.
pub const MAX_TENSORS: u64 = 65_536;
/// The longest real metadata arrays are vocabularies and merge lists (Gemma 3: 262,144 tokens);
/// 16 times that leaves room while bounding what nested and string arrays cost in memory.
pub const MAX_ARRAY_LEN: u64 = 1 << 22;

/// Where a tensor is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    /// GGUF order: `dims[0]` is the contiguous row length.
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Absolute byte offset of the data in the file (in its first shard, for an RDRR model).
    pub offset: u64,
    pub n_bytes: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        // Checked at open: the product does not overflow.
        self.dims.iter().product()
    }

    /// Number of rows: the product of `dims[1..]`.
    pub fn rows(&self) -> u64 {
        self.dims[1..].iter().product()
    }

    pub fn row_len(&self) -> u64 {
        self.dims[0]
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> u64 {
        self.n_bytes / self.rows()
    }
}

enum Storage {
    Mapped(Mmap),
    Owned(Vec<u8>),
    /// Tensor data in several files (an RDRR model's shards); `tensor_pieces[i]` are the
    /// ranges of tensor `i`, in order: one, or one a shard for a tensor spanning shards.
    Shards {
        maps: Vec<Mmap>,
        tensor_pieces: Vec<Vec<ShardRange>>,
    },
}

/// A range of bytes in one shard of an RDRR model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardRange {
    pub shard: usize,
    pub start: u64,
    pub len: u64,
}

/// A parsed GGUF file (versions 2 and 3, little-endian), or another container presented as
/// one (an RDRR manifest and its shards: see [`GgufFile::from_shards`]): metadata, a tensor
/// table and each tensor's bytes. All structure is validated at open, so tensor data can be
/// sliced without further checks.
pub struct GgufFile {
    storage: Storage,
    source: String,
    version: u32,
    alignment: u64,
    metadata: Metadata,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
    data_offset: u64,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("source", &self.source)
            .field("version", &self.version)
            .field("metadata_entries", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl GgufFile {
    /// Memory-maps and parses the file at `path`; errors name the path.
    pub fn open(path: &Path) -> Result<GgufFile, GgufError> {
        let io_error = |source| GgufError::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_error)?;
        // SAFETY: the map is read-only. Another process truncating or rewriting the model
        // file while it is open is outside what we can guard against (as for every mmap reader).
        let map = unsafe { Mmap::map(&file) }.map_err(io_error)?;
        Self::parse(Storage::Mapped(map), path.display().to_string())
    }

    /// Parses a file held in memory; errors name it `<memory>`.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<GgufFile, GgufError> {
        Self::parse(Storage::Owned(bytes), "<memory>".to_string())
    }

    /// Metadata and tensors that another container (RDRR) has read and checked, with each
    /// tensor's data in the shard ranges `tensor_pieces[i]`. The caller has checked every
    /// range lies within its shard, the ranges of a tensor add up to its size and names are
    /// unique.
    pub(crate) fn from_shards(
        source: String,
        metadata: Metadata,
        tensors: Vec<TensorInfo>,
        tensor_pieces: Vec<Vec<ShardRange>>,
        maps: Vec<Mmap>,
    ) -> GgufFile {
        debug_assert_eq!(tensors.len(), tensor_pieces.len());
        debug_assert!(tensors.iter().zip(&tensor_pieces).all(|(tensor, pieces)| {
            pieces.iter().map(|piece| piece.len).sum::<u64>() == tensor.n_bytes
                && pieces.iter().all(|piece| piece.start + piece.len <= maps[piece.shard].len() as u64)
        }));
        let alignment = alignment_of(&metadata).unwrap_or(DEFAULT_ALIGNMENT);
        GgufFile {
            storage: Storage::Shards { maps, tensor_pieces },
            source,
            version: 3,
            alignment,
            metadata,
            tensor_index: tensors.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect(),
            tensors,
            data_offset: 0,
        }
    }

    fn parse(storage: Storage, source: String) -> Result<GgufFile, GgufError> {
        let bytes = match &storage {
            Storage::Mapped(map) => &map[..],
            Storage::Owned(bytes) => &bytes[..],
            Storage::Shards { .. } => unreachable!("shards are never parsed as one GGUF"),
        };
        let parsed = parse_structure(bytes)
            .map_err(|problem| GgufError::Malformed { file: source.clone(), problem })?;
        Ok(GgufFile {
            storage,
            source,
            version: parsed.version,
            alignment: parsed.alignment,
            metadata: parsed.metadata,
            tensor_index: parsed.tensors.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect(),
            tensors: parsed.tensors,
            data_offset: parsed.data_offset,
        })
    }

    /// The path the file was opened from, or `<memory>`.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    /// `general.alignment`, or 32 when absent.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Tensors in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// Absolute offset of the tensor data section.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Bytes of the file, or of all shards together.
    pub fn file_size(&self) -> u64 {
        match &self.storage {
            Storage::Mapped(map) => map.len() as u64,
            Storage::Owned(bytes) => bytes.len() as u64,
            Storage::Shards { maps, .. } => maps.iter().map(|map| map.len() as u64).sum(),
        }
    }

    /// The tensor's bytes where they lie, never copied: one piece, or for an RDRR tensor
    /// that spans shards one a shard, each holding whole rows. `info` must come from this
    /// file (its bounds were checked at open).
    pub fn tensor_bytes(&self, info: &TensorInfo) -> TensorBytes<'_> {
        fn within(bytes: &[u8], start: u64, len: u64) -> &[u8] {
            &bytes[start as usize..(start + len) as usize]
        }
        let pieces = match &self.storage {
            Storage::Mapped(map) => vec![within(map, info.offset, info.n_bytes)],
            Storage::Owned(bytes) => vec![within(bytes, info.offset, info.n_bytes)],
            Storage::Shards { maps, tensor_pieces } => tensor_pieces[self.tensor_index[&info.name]]
                .iter()
                .map(|piece| within(&maps[piece.shard], piece.start, piece.len))
                .collect(),
        };
        TensorBytes::new(pieces)
    }

    /// The tensor's bytes in one slice: borrowed from the file, except for an RDRR tensor
    /// spanning shards, which is gathered into a copy (the weight upload reads
    /// [`Self::tensor_bytes`] instead, piece by piece).
    pub fn tensor_data(&self, info: &TensorInfo) -> Cow<'_, [u8]> {
        self.tensor_bytes(info).contiguous()
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<&str, GgufError> {
        self.metadata
            .get_str("general.architecture")?
            .ok_or_else(|| GgufError::MissingKey { key: "general.architecture".to_string() })
    }
}

struct Structure {
    version: u32,
    alignment: u64,
    metadata: Metadata,
    tensors: Vec<TensorInfo>,
    data_offset: u64,
}

fn parse_structure(bytes: &[u8]) -> Result<Structure, Malformation> {
    let mut cursor = Cursor::new(bytes);
    let magic = cursor.take(4, &|| "magic".to_string())?;
    if magic != GGUF_MAGIC {
        return Err(Malformation::BadMagic { found: magic.to_vec() });
    }
    let version = cursor.u32(&|| "version".to_string())?;
    if version != 2 && version != 3 {
        let hint = match version {
            1 => "; version 1 is obsolete",
            v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => "; this looks like a big-endian file",
            _ => "",
        };
        return Err(Malformation::UnsupportedVersion { version, hint });
    }
    let tensor_count = cursor.u64(&|| "tensor count".to_string())?;
    let kv_count = cursor.u64(&|| "metadata key/value count".to_string())?;

    cursor.section = Section::Metadata;
    let metadata = read_metadata(&mut cursor, kv_count)?;
    let alignment = alignment_of(&metadata)?;

    cursor.section = Section::TensorInfo;
    let mut infos = read_tensor_infos(&mut cursor, tensor_count)?;

    cursor.section = Section::Data;
    let data_offset = align_up(cursor.position(), alignment).ok_or(Malformation::Truncated {
        section: Section::Data,
        what: "padding before tensor data".to_string(),
        offset: cursor.position(),
        needed: alignment,
        file_size: bytes.len() as u64,
    })?;
    for info in &mut infos {
        info.offset = locate_data(info, data_offset, alignment, bytes.len() as u64)?;
    }
    check_no_overlap(&infos)?;
    Ok(Structure { version, alignment, metadata, tensors: infos, data_offset })
}

fn align_up(position: u64, alignment: u64) -> Option<u64> {
    position.checked_next_multiple_of(alignment)
}

fn alignment_of(metadata: &Metadata) -> Result<u64, Malformation> {
    let alignment = metadata
        .get_u32(ALIGNMENT_KEY)
        .map_err(|e| Malformation::AlignmentType(e.to_string()))?
        .map_or(DEFAULT_ALIGNMENT, u64::from);
    if !alignment.is_power_of_two() {
        return Err(Malformation::BadAlignment { value: alignment });
    }
    Ok(alignment)
}

fn read_metadata(cursor: &mut Cursor, kv_count: u64) -> Result<Metadata, Malformation> {
    let what = || "metadata key/value".to_string();
    // Smallest entry: empty key (8-byte length), type id (4), a one-byte value.
    cursor.check_count(kv_count, 8 + 4 + 1, &what)?;
    cursor.check_limit(kv_count, MAX_METADATA_ENTRIES, &what)?;
    let mut metadata = Metadata::default();
    for i in 0..kv_count {
        let key = cursor.str(&|| format!("metadata key #{i}"))?;
        let type_id = cursor.u32(&|| format!("type of metadata key '{key}'"))?;
        let value = read_value(cursor, type_id, key, 0)?;
        metadata.insert_new(key.to_string(), value).map_err(|key| Malformation::DuplicateKey { key })?;
    }
    Ok(metadata)
}

fn value_type(type_id: u32, key: &str) -> Result<ValueType, Malformation> {
    ValueType::from_id(type_id)
        .ok_or_else(|| Malformation::UnknownValueType { key: key.to_string(), id: type_id })
}

fn read_value(
    cursor: &mut Cursor,
    type_id: u32,
    key: &str,
    depth: usize,
) -> Result<MetadataValue, Malformation> {
    let what = || format!("value of metadata key '{key}'");
    Ok(match value_type(type_id, key)? {
        ValueType::U8 => MetadataValue::U8(cursor.u8(&what)?),
        ValueType::I8 => MetadataValue::I8(cursor.i8(&what)?),
        ValueType::U16 => MetadataValue::U16(cursor.u16(&what)?),
        ValueType::I16 => MetadataValue::I16(cursor.i16(&what)?),
        ValueType::U32 => MetadataValue::U32(cursor.u32(&what)?),
        ValueType::I32 => MetadataValue::I32(cursor.i32(&what)?),
        ValueType::U64 => MetadataValue::U64(cursor.u64(&what)?),
        ValueType::I64 => MetadataValue::I64(cursor.i64(&what)?),
        ValueType::F32 => MetadataValue::F32(cursor.f32(&what)?),
        ValueType::F64 => MetadataValue::F64(cursor.f64(&what)?),
        ValueType::Bool => MetadataValue::Bool(read_bool(cursor, key)?),
        ValueType::String => MetadataValue::String(cursor.str(&what)?.to_string()),
        ValueType::Array => MetadataValue::Array(read_array(cursor, key, depth)?),
    })
}

fn read_bool(cursor: &mut Cursor, key: &str) -> Result<bool, Malformation> {
    let offset = cursor.position();
    match cursor.u8(&|| format!("value of metadata key '{key}'"))? {
        0 => Ok(false),
        1 => Ok(true),
        value => Err(Malformation::InvalidBool { key: key.to_string(), value, offset }),
    }
}

/// Reads `count` fixed-size little-endian numbers in one bounds check.
fn read_numbers<T, const N: usize>(
    cursor: &mut Cursor,
    count: usize,
    key: &str,
    decode: fn([u8; N]) -> T,
) -> Result<Vec<T>, Malformation> {
    // check_count already bounded count * N by the bytes left, so this cannot overflow.
    let bytes = cursor.take((count * N) as u64, &|| format!("elements of metadata array '{key}'"))?;
    Ok(bytes
        .chunks_exact(N)
        .map(|chunk| decode(chunk.try_into().expect("chunks_exact yields N bytes")))
        .collect())
}

fn read_array(cursor: &mut Cursor, key: &str, depth: usize) -> Result<MetadataArray, Malformation> {
    if depth >= MAX_ARRAY_DEPTH {
        return Err(Malformation::NestingTooDeep { key: key.to_string(), max_depth: MAX_ARRAY_DEPTH });
    }
    let element_type_id = cursor.u32(&|| format!("element type of metadata array '{key}'"))?;
    let element_type = value_type(element_type_id, key)?;
    let count = cursor.u64(&|| format!("length of metadata array '{key}'"))?;
    let what = || format!("metadata array '{key}' element");
    let count = cursor.check_count(count, element_type.min_encoded_len(), &what)?;
    cursor.check_limit(count as u64, MAX_ARRAY_LEN, &what)?;
    Ok(match element_type {
        ValueType::U8 => MetadataArray::U8(read_numbers(cursor, count, key, u8::from_le_bytes)?),
        ValueType::I8 => MetadataArray::I8(read_numbers(cursor, count, key, i8::from_le_bytes)?),
        ValueType::U16 => MetadataArray::U16(read_numbers(cursor, count, key, u16::from_le_bytes)?),
        ValueType::I16 => MetadataArray::I16(read_numbers(cursor, count, key, i16::from_le_bytes)?),
        ValueType::U32 => MetadataArray::U32(read_numbers(cursor, count, key, u32::from_le_bytes)?),
        ValueType::I32 => MetadataArray::I32(read_numbers(cursor, count, key, i32::from_le_bytes)?),
        ValueType::U64 => MetadataArray::U64(read_numbers(cursor, count, key, u64::from_le_bytes)?),
        ValueType::I64 => MetadataArray::I64(read_numbers(cursor, count, key, i64::from_le_bytes)?),
        ValueType::F32 => MetadataArray::F32(read_numbers(cursor, count, key, f32::from_le_bytes)?),
        ValueType::F64 => MetadataArray::F64(read_numbers(cursor, count, key, f64::from_le_bytes)?),
        ValueType::Bool => {
            let mut values = Vec::with_capacity(count);
            for _ in 0..count {
                values.push(read_bool(cursor, key)?);
            }
            MetadataArray::Bool(values)
        }
        ValueType::String => {
            let mut strings = StringArray::new();
            // Reserving the exact text length spares a vocabulary the doubling growth's peak.
            strings.reserve(count, string_bytes_ahead(cursor, count));
            for i in 0..count {
                strings.push(cursor.str(&|| format!("element {i} of metadata array '{key}'"))?);
            }
            MetadataArray::String(strings)
        }
        ValueType::Array => {
            let mut arrays = Vec::with_capacity(count);
            for _ in 0..count {
                arrays.push(read_array(cursor, key, depth + 1)?);
            }
            MetadataArray::Array(arrays)
        }
    })
}

/// The total length of the `count` strings at the cursor, read without moving it; a string
/// that does not fit ends the sum (reading the strings then reports it).
fn string_bytes_ahead(cursor: &Cursor, count: usize) -> usize {
    let mut ahead = cursor.clone();
    let mut total = 0usize;
    for _ in 0..count {
        let Ok(len) = ahead.u64(&String::new) else { break };
        if ahead.take(len, &String::new).is_err() {
            break;
        }
        // len <= the bytes left, a usize.
        total += len as usize;
    }
    total
}

fn read_tensor_infos(cursor: &mut Cursor, tensor_count: u64) -> Result<Vec<TensorInfo>, Malformation> {
    let what = || "tensor info".to_string();
    // Smallest entry: empty name (8), n_dims (4), one dim (8), type (4), offset (8).
    let count = cursor.check_count(tensor_count, 8 + 4 + 8 + 4 + 8, &what)?;
    cursor.check_limit(tensor_count, MAX_TENSORS, &what)?;
    let mut infos = Vec::with_capacity(count);
    let mut seen = std::collections::HashSet::with_capacity(count);
    for i in 0..count {
        let name = cursor.str(&|| format!("name of tensor #{i}"))?;
        let what = |field: &str| format!("{field} of tensor '{name}'");
        let n_dims = cursor.u32(&|| what("dimension count"))?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(Malformation::DimensionCount { tensor: name.to_string(), n_dims });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(cursor.u64(&|| what("dimensions"))?);
        }
        let type_id = cursor.u32(&|| what("type"))?;
        let relative_offset = cursor.u64(&|| what("data offset"))?;

        if dims.contains(&0) {
            return Err(Malformation::ZeroDimension { tensor: name.to_string(), dims });
        }
        let ggml_type = GgmlType::from_id(type_id)
            .map_err(|_| Malformation::UnknownTensorType { tensor: name.to_string(), id: type_id })?;
        let n_bytes = tensor_byte_size(name, &dims, ggml_type)?;
        if !seen.insert(name) {
            return Err(Malformation::DuplicateTensor { tensor: name.to_string() });
        }
        infos.push(TensorInfo {
            name: name.to_string(),
            dims,
            ggml_type,
            // Relative until the data section start is known.
            offset: relative_offset,
            n_bytes,
        });
    }
    Ok(infos)
}

pub(crate) fn tensor_byte_size(name: &str, dims: &[u64], ggml_type: GgmlType) -> Result<u64, Malformation> {
    let overflow = || Malformation::SizeOverflow {
        tensor: name.to_string(),
        type_name: ggml_type.name(),
        dims: dims.to_vec(),
    };
    let block_len = ggml_type.block_len();
    if !dims[0].is_multiple_of(block_len as u64) {
        return Err(Malformation::RowNotWholeBlocks {
            tensor: name.to_string(),
            type_name: ggml_type.name(),
            row_len: dims[0],
            block_len,
        });
    }
    // ggml counts elements in an int64_t; refuse what it could not represent either.
    let n_elements = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(overflow)?;
    let row_bytes = ggml_type.row_bytes(dims[0]).map_err(|_| overflow())?;
    let rows = n_elements / dims[0];
    row_bytes.checked_mul(rows).ok_or_else(overflow)
}

/// Two tensors sharing bytes would alias each other's weights: a crafted file, never a converter's.
fn check_no_overlap(infos: &[TensorInfo]) -> Result<(), Malformation> {
    let mut by_offset: Vec<&TensorInfo> = infos.iter().collect();
    by_offset.sort_unstable_by_key(|info| info.offset);
    for pair in by_offset.windows(2) {
        let (first, second) = (pair[0], pair[1]);
        // Both ends were checked against the file size, so the sum does not overflow.
        if first.offset + first.n_bytes > second.offset {
            return Err(Malformation::OverlappingTensors {
                first: first.name.clone(),
                second: second.name.clone(),
                offset: second.offset,
            });
        }
    }
    Ok(())
}

fn locate_data(
    info: &TensorInfo,
    data_offset: u64,
    alignment: u64,
    file_size: u64,
) -> Result<u64, Malformation> {
    let relative = info.offset;
    if !relative.is_multiple_of(alignment) {
        return Err(Malformation::MisalignedTensor {
            tensor: info.name.clone(),
            offset: relative,
            alignment,
        });
    }
    let absolute = data_offset
        .checked_add(relative)
        .ok_or_else(|| Malformation::DataOffsetOverflow { tensor: info.name.clone(), offset: relative })?;
    let within_file = absolute.checked_add(info.n_bytes).is_some_and(|end| end <= file_size);
    if !within_file {
        return Err(Malformation::TensorPastEnd {
            tensor: info.name.clone(),
            offset: absolute,
            n_bytes: info.n_bytes,
            file_size,
        });
    }
    Ok(absolute)
}
