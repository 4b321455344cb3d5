//! Writes an RDRR model tensor by tensor: each tensor's bytes go straight to the current
//! shard (hashed on the way), so memory stays at one copy buffer whatever the model's size.

use std::{
    collections::HashSet,
    fs::{self, File},
    io::{self, BufWriter, Write},
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use super::{
    error::RdrrWriteError,
    manifest::{RdrrManifest, Sections, ShardEntry, TensorEntry},
    FORMAT_NAME, FORMAT_VERSION, MANIFEST_FILE, TENSOR_ALIGNMENT,
};
use crate::{
    gguf::{tensor_byte_size, GgmlType, MetadataValue},
    store::to_hex,
};

/// A file the writer produced, with what the store records about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub file_name: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// A finished RDRR model: the manifest first, then the shards in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenRdrr {
    pub files: Vec<WrittenFile>,
}

impl WrittenRdrr {
    pub fn manifest(&self) -> &WrittenFile {
        &self.files[0]
    }
}

struct OpenShard {
    file_name: String,
    path: PathBuf,
    out: BufWriter<File>,
    hasher: Sha256,
    written: u64,
}

impl OpenShard {
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// Counts and forwards a tensor's bytes into its shard.
struct TensorSink<'a> {
    shard: &'a mut OpenShard,
    written: u64,
}

impl Write for TensorSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.shard.write(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.shard.out.flush()
    }
}

/// Writes `rdrr.json` and `shard-NNNNN.bin` files into one folder.
pub struct RdrrWriter {
    dir: PathBuf,
    shard_limit: u64,
    tensors: Vec<TensorEntry>,
    names: HashSet<String>,
    shards: Vec<WrittenFile>,
    current: Option<OpenShard>,
}

impl RdrrWriter {
    /// Starts a model in `dir` (created if needed), with shards of at most `shard_limit`
    /// bytes ([`super::MAX_SHARD_BYTES`] outside tests).
    pub fn create(dir: &Path, shard_limit: u64) -> Result<RdrrWriter, RdrrWriteError> {
        fs::create_dir_all(dir).map_err(|source| RdrrWriteError::Io { path: dir.to_path_buf(), source })?;
        Ok(RdrrWriter {
            dir: dir.to_path_buf(),
            shard_limit,
            tensors: Vec::new(),
            names: HashSet::new(),
            shards: Vec::new(),
            current: None,
        })
    }

    /// Adds a tensor of `ty` with ggml-order `dims` (`dims[0]` the row length): `fill` must
    /// write exactly the bytes its type and shape take, in ggml's block layout.
    pub fn add_tensor(
        &mut self,
        name: &str,
        ty: GgmlType,
        dims: &[u64],
        fill: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), RdrrWriteError> {
        let bytes = tensor_byte_size(name, dims, ty)
            .map_err(|source| RdrrWriteError::Shape { tensor: name.to_string(), source })?;
        if bytes > self.shard_limit {
            return Err(RdrrWriteError::TensorTooLarge {
                tensor: name.to_string(),
                bytes,
                limit: self.shard_limit,
            });
        }
        if !self.names.insert(name.to_string()) {
            return Err(RdrrWriteError::DuplicateTensor { tensor: name.to_string() });
        }
        let fits =
            |shard: &OpenShard| shard.written.next_multiple_of(TENSOR_ALIGNMENT) + bytes <= self.shard_limit;
        if self.current.as_ref().is_some_and(|shard| !fits(shard)) {
            self.close_shard()?;
        }
        if self.current.is_none() {
            self.open_shard()?;
        }
        let shard_index = self.shards.len();
        let shard = self.current.as_mut().expect("a shard was just opened");
        let io_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| RdrrWriteError::Io { path, source }
        };
        let padding = shard.written.next_multiple_of(TENSOR_ALIGNMENT) - shard.written;
        shard.write(&vec![0u8; padding as usize]).map_err(io_error(&shard.path))?;
        let offset = shard.written;
        let mut sink = TensorSink { shard, written: 0 };
        fill(&mut sink).map_err(io_error(&sink.shard.path))?;
        if sink.written != bytes {
            return Err(RdrrWriteError::WrongLength {
                tensor: name.to_string(),
                expected: bytes,
                written: sink.written,
            });
        }
        self.tensors.push(TensorEntry {
            name: name.to_string(),
            ty: ty.name().to_string(),
            shape: dims.iter().rev().copied().collect(),
            shard: shard_index,
            offset,
            bytes,
        });
        Ok(())
    }

    /// Closes the last shard and writes the manifest with `metadata` (GGUF keys and types:
    /// `general.architecture`, `<arch>.*`, `tokenizer.*`…).
    pub fn finish<'a>(
        mut self,
        metadata: impl IntoIterator<Item = (&'a str, &'a MetadataValue)>,
    ) -> Result<WrittenRdrr, RdrrWriteError> {
        let sections = Sections::from_metadata(metadata)?;
        if self.current.is_some() {
            self.close_shard()?;
        }
        let manifest = RdrrManifest {
            format: FORMAT_NAME.to_string(),
            format_version: FORMAT_VERSION,
            architecture: sections.architecture,
            config: sections.config,
            tokenizer: sections.tokenizer,
            chat_template: sections.chat_template,
            metadata: sections.metadata,
            alignment: TENSOR_ALIGNMENT,
            tensors: self.tensors,
            shards: self
                .shards
                .iter()
                .map(|shard| ShardEntry {
                    file: shard.file_name.clone(),
                    size: shard.size,
                    sha256: shard.sha256.clone(),
                })
                .collect(),
        };
        let mut json = serde_json::to_vec_pretty(&manifest).expect("a manifest always serializes");
        json.push(b'\n');
        let path = self.dir.join(MANIFEST_FILE);
        write_synced(&path, &json).map_err(|source| RdrrWriteError::Io { path: path.clone(), source })?;
        let manifest_file = WrittenFile {
            path,
            file_name: MANIFEST_FILE.to_string(),
            size: json.len() as u64,
            sha256: to_hex(&Sha256::digest(&json)),
        };
        let mut files = vec![manifest_file];
        files.append(&mut self.shards);
        Ok(WrittenRdrr { files })
    }

    fn open_shard(&mut self) -> Result<(), RdrrWriteError> {
        let file_name = format!("shard-{:05}.bin", self.shards.len());
        let path = self.dir.join(&file_name);
        let file = File::create(&path).map_err(|source| RdrrWriteError::Io { path: path.clone(), source })?;
        self.current = Some(OpenShard {
            file_name,
            path,
            out: BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            written: 0,
        });
        Ok(())
    }

    fn close_shard(&mut self) -> Result<(), RdrrWriteError> {
        let Some(shard) = self.current.take() else { return Ok(()) };
        let OpenShard { file_name, path, out, hasher, written } = shard;
        let io_error = |source| RdrrWriteError::Io { path: path.clone(), source };
        let file = out.into_inner().map_err(|error| io_error(error.into_error()))?;
        file.sync_all().map_err(io_error)?;
        self.shards.push(WrittenFile { file_name, size: written, sha256: to_hex(&hasher.finalize()), path });
        Ok(())
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
