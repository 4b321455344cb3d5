use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use super::file::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS};
use super::ggml_type::GgmlType;
use super::metadata::{MetadataArray, MetadataValue};

#[derive(Debug, thiserror::Error)]
pub enum GgufWriteError {
    #[error("writing GGUF: {0}")]
    Io(#[from] io::Error),
    #[error("metadata key '{key}' added twice")]
    DuplicateKey { key: String },
    #[error("metadata key 'general.alignment' must be a u32 power of two, got {value:?}")]
    BadAlignment { value: MetadataValue },
    #[error("tensor '{tensor}' added twice")]
    DuplicateTensor { tensor: String },
    #[error("tensor '{tensor}' with dims {dims:?} as {type_name}: {reason}")]
    BadShape { tensor: String, dims: Vec<u64>, type_name: &'static str, reason: &'static str },
    #[error("tensor '{tensor}': {actual} data bytes given, its shape needs {expected}")]
    DataLength { tensor: String, expected: u64, actual: u64 },
}

type DataWriter<'a> = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + 'a>;

enum TensorData<'a> {
    Bytes(Vec<u8>),
    /// Produced while the file is written, so large models never sit in memory whole.
    Streamed(DataWriter<'a>),
}

struct PendingTensor<'a> {
    name: String,
    dims: Vec<u64>,
    ggml_type: GgmlType,
    n_bytes: u64,
    data: TensorData<'a>,
}

/// Builds a GGUF v3 file: metadata in insertion order, tensors in insertion order, each
/// tensor's data aligned to `general.alignment` (32 unless set).
pub struct GgufWriter<'a> {
    alignment: u64,
    metadata: Vec<(String, MetadataValue)>,
    keys: HashSet<String>,
    tensors: Vec<PendingTensor<'a>>,
}

impl Default for GgufWriter<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> GgufWriter<'a> {
    pub fn new() -> Self {
        GgufWriter {
            alignment: DEFAULT_ALIGNMENT,
            metadata: Vec::new(),
            keys: HashSet::new(),
            tensors: Vec::new(),
        }
    }

    /// Adds a key; `general.alignment` (a u32 power of two) also sets the data alignment.
    pub fn add_metadata(
        &mut self,
        key: impl Into<String>,
        value: impl Into<MetadataValue>,
    ) -> Result<(), GgufWriteError> {
        let key = key.into();
        let value = value.into();
        if self.keys.contains(&key) {
            return Err(GgufWriteError::DuplicateKey { key });
        }
        if key == ALIGNMENT_KEY {
            match value {
                MetadataValue::U32(a) if a.is_power_of_two() => self.alignment = a.into(),
                _ => return Err(GgufWriteError::BadAlignment { value }),
            }
        }
        self.keys.insert(key.clone());
        self.metadata.push((key, value));
        Ok(())
    }

    /// Adds a tensor whose bytes are already in memory.
    pub fn add_tensor(
        &mut self,
        name: impl Into<String>,
        dims: &[u64],
        ggml_type: GgmlType,
        data: Vec<u8>,
    ) -> Result<(), GgufWriteError> {
        let name = name.into();
        let n_bytes = self.check_tensor(&name, dims, ggml_type)?;
        if data.len() as u64 != n_bytes {
            return Err(GgufWriteError::DataLength {
                tensor: name,
                expected: n_bytes,
                actual: data.len() as u64,
            });
        }
        self.push(name, dims, ggml_type, n_bytes, TensorData::Bytes(data));
        Ok(())
    }

    /// Adds a tensor whose bytes `write_data` produces when the file is written; it must write
    /// exactly the returned number of bytes.
    pub fn add_tensor_streamed(
        &mut self,
        name: impl Into<String>,
        dims: &[u64],
        ggml_type: GgmlType,
        write_data: impl FnOnce(&mut dyn Write) -> io::Result<()> + 'a,
    ) -> Result<u64, GgufWriteError> {
        let name = name.into();
        let n_bytes = self.check_tensor(&name, dims, ggml_type)?;
        self.push(name, dims, ggml_type, n_bytes, TensorData::Streamed(Box::new(write_data)));
        Ok(n_bytes)
    }

    fn push(&mut self, name: String, dims: &[u64], ggml_type: GgmlType, n_bytes: u64, data: TensorData<'a>) {
        self.tensors.push(PendingTensor { name, dims: dims.to_vec(), ggml_type, n_bytes, data });
    }

    fn check_tensor(&self, name: &str, dims: &[u64], ggml_type: GgmlType) -> Result<u64, GgufWriteError> {
        if self.tensors.iter().any(|t| t.name == name) {
            return Err(GgufWriteError::DuplicateTensor { tensor: name.to_string() });
        }
        let bad_shape = |reason| GgufWriteError::BadShape {
            tensor: name.to_string(),
            dims: dims.to_vec(),
            type_name: ggml_type.name(),
            reason,
        };
        if dims.is_empty() || dims.len() > MAX_DIMS as usize {
            return Err(bad_shape("1 to 4 dimensions allowed"));
        }
        if dims.contains(&0) {
            return Err(bad_shape("zero dimension"));
        }
        let row_bytes = ggml_type
            .row_bytes(dims[0])
            .map_err(|_| bad_shape("row length is not a whole number of blocks"))?;
        dims[1..]
            .iter()
            .try_fold(row_bytes, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| bad_shape("size overflows"))
    }

    /// Writes the whole file to `out`.
    pub fn write_to(self, out: impl Write) -> Result<(), GgufWriteError> {
        let mut out = CountingWriter { inner: out, written: 0 };
        self.write_header_and_infos(&mut out)?;
        pad_to(&mut out, self.alignment)?;
        for tensor in self.tensors {
            let start = out.written;
            match tensor.data {
                TensorData::Bytes(bytes) => out.write_all(&bytes)?,
                TensorData::Streamed(write_data) => write_data(&mut out)?,
            }
            let actual = out.written - start;
            if actual != tensor.n_bytes {
                return Err(GgufWriteError::DataLength {
                    tensor: tensor.name,
                    expected: tensor.n_bytes,
                    actual,
                });
            }
            pad_to(&mut out, self.alignment)?;
        }
        out.flush()?;
        Ok(())
    }

    pub fn to_bytes(self) -> Result<Vec<u8>, GgufWriteError> {
        let mut bytes = Vec::new();
        self.write_to(&mut bytes)?;
        Ok(bytes)
    }

    /// Creates (or replaces) the file at `path`.
    pub fn write_file(self, path: &Path) -> Result<(), GgufWriteError> {
        let file =
            File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        self.write_to(BufWriter::new(file))
    }

    fn write_header_and_infos(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(GGUF_MAGIC)?;
        out.write_all(&3u32.to_le_bytes())?;
        out.write_all(&(self.tensors.len() as u64).to_le_bytes())?;
        out.write_all(&(self.metadata.len() as u64).to_le_bytes())?;
        for (key, value) in &self.metadata {
            write_str(out, key)?;
            out.write_all(&(value.value_type() as u32).to_le_bytes())?;
            write_value(out, value)?;
        }
        let mut relative_offset = 0u64;
        for tensor in &self.tensors {
            write_str(out, &tensor.name)?;
            out.write_all(&(tensor.dims.len() as u32).to_le_bytes())?;
            for dim in &tensor.dims {
                out.write_all(&dim.to_le_bytes())?;
            }
            out.write_all(&tensor.ggml_type.id().to_le_bytes())?;
            out.write_all(&relative_offset.to_le_bytes())?;
            relative_offset = (relative_offset + tensor.n_bytes)
                .checked_next_multiple_of(self.alignment)
                .ok_or_else(|| io::Error::other("tensor data offsets overflow u64"))?;
        }
        Ok(())
    }
}

struct CountingWriter<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn pad_to<W: Write>(out: &mut CountingWriter<W>, alignment: u64) -> io::Result<()> {
    let padding = out.written.next_multiple_of(alignment) - out.written;
    io::copy(&mut io::repeat(0).take(padding), out)?;
    Ok(())
}

fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    out.write_all(&(s.len() as u64).to_le_bytes())?;
    out.write_all(s.as_bytes())
}

fn write_value(out: &mut impl Write, value: &MetadataValue) -> io::Result<()> {
    match value {
        MetadataValue::U8(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::I8(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::U16(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::I16(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::U32(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::I32(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::U64(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::I64(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::F32(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::F64(v) => out.write_all(&v.to_le_bytes()),
        MetadataValue::Bool(v) => out.write_all(&[u8::from(*v)]),
        MetadataValue::String(v) => write_str(out, v),
        MetadataValue::Array(array) => write_array(out, array),
    }
}

fn write_array(out: &mut impl Write, array: &MetadataArray) -> io::Result<()> {
    fn numbers<const N: usize, T: Copy>(
        out: &mut impl Write,
        v: &[T],
        encode: fn(T) -> [u8; N],
    ) -> io::Result<()> {
        v.iter().try_for_each(|&x| out.write_all(&encode(x)))
    }
    out.write_all(&(array.element_type() as u32).to_le_bytes())?;
    out.write_all(&(array.len() as u64).to_le_bytes())?;
    match array {
        MetadataArray::U8(v) => out.write_all(v),
        MetadataArray::I8(v) => numbers(out, v, i8::to_le_bytes),
        MetadataArray::U16(v) => numbers(out, v, u16::to_le_bytes),
        MetadataArray::I16(v) => numbers(out, v, i16::to_le_bytes),
        MetadataArray::U32(v) => numbers(out, v, u32::to_le_bytes),
        MetadataArray::I32(v) => numbers(out, v, i32::to_le_bytes),
        MetadataArray::U64(v) => numbers(out, v, u64::to_le_bytes),
        MetadataArray::I64(v) => numbers(out, v, i64::to_le_bytes),
        MetadataArray::F32(v) => numbers(out, v, f32::to_le_bytes),
        MetadataArray::F64(v) => numbers(out, v, f64::to_le_bytes),
        MetadataArray::Bool(v) => v.iter().try_for_each(|&b| out.write_all(&[u8::from(b)])),
        MetadataArray::String(v) => v.iter().try_for_each(|s| write_str(out, s)),
        MetadataArray::Array(v) => v.iter().try_for_each(|a| write_array(out, a)),
    }
}
