//! Writes an RDRR model tensor by tensor: each tensor's bytes go straight to its shard, or
//! shards for one larger than a shard (hashed on the way), so memory stays at one copy
//! buffer whatever the model's or the tensor's size.

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
    store::{to_hex, VerifiedFile},
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

    /// The files as the store installs them: hashed as they were written.
    pub fn verified_files(&self) -> Vec<VerifiedFile> {
        self.files
            .iter()
            .map(|file| VerifiedFile {
                path: file.path.clone(),
                file_name: file.file_name.clone(),
                sha256: file.sha256.clone(),
                size: file.size,
            })
            .collect()
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

/// The shard files: those finished and the one being written.
struct Shards {
    dir: PathBuf,
    limit: u64,
    done: Vec<WrittenFile>,
    current: Option<OpenShard>,
}

impl Shards {
    fn file_name(index: usize) -> String {
        format!("shard-{index:05}.bin")
    }

    /// The shard being written, or else the next one: the file an I/O error is about.
    fn path_in_use(&self) -> PathBuf {
        self.dir.join(Self::file_name(self.done.len()))
    }

    /// Makes room for a tensor of `bytes` in rows of `row_bytes` (at most a shard) and pads
    /// the current shard to its aligned start. A tensor that fits one shard goes whole into
    /// the current one, or a new one where the current cannot hold it, so it can be bound at
    /// one offset; a larger one starts in the current shard where a row fits and goes on in
    /// the following ones. Returns the shard, the offset and how many bytes go there: whole
    /// rows, as the reader requires of a tensor that goes on into the next shard.
    fn start_tensor(&mut self, bytes: u64, row_bytes: u64) -> io::Result<(usize, u64, u64)> {
        let needed = if bytes <= self.limit { bytes } else { row_bytes };
        let room =
            |shard: &OpenShard| self.limit.saturating_sub(shard.written.next_multiple_of(TENSOR_ALIGNMENT));
        if self.current.as_ref().is_some_and(|shard| room(shard) < needed) {
            self.close()?;
        }
        if self.current.is_none() {
            self.open()?;
        }
        let shard = self.current.as_mut().expect("a shard is open");
        let padding = shard.written.next_multiple_of(TENSOR_ALIGNMENT) - shard.written;
        shard.write(&vec![0u8; padding as usize])?;
        let room = self.limit - shard.written;
        Ok((self.done.len(), shard.written, bytes.min(room / row_bytes * row_bytes)))
    }

    fn open(&mut self) -> io::Result<()> {
        let file_name = Self::file_name(self.done.len());
        let path = self.dir.join(&file_name);
        let file = File::create(&path)?;
        self.current = Some(OpenShard {
            file_name,
            path,
            out: BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            written: 0,
        });
        Ok(())
    }

    fn close(&mut self) -> io::Result<()> {
        let Some(shard) = self.current.take() else { return Ok(()) };
        let OpenShard { file_name, path, out, hasher, written } = shard;
        let file = out.into_inner().map_err(|error| error.into_error())?;
        file.sync_all()?;
        self.done.push(WrittenFile { file_name, size: written, sha256: to_hex(&hasher.finalize()), path });
        Ok(())
    }
}

/// Counts and forwards a tensor's bytes into its shards: the piece the current shard takes,
/// then (for a tensor larger than a shard) the next shards, each as many whole rows as fit.
struct TensorSink<'a> {
    shards: &'a mut Shards,
    row_bytes: u64,
    expected: u64,
    written: u64,
    /// What the current shard takes yet.
    piece_left: u64,
}

impl Write for TensorSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.expected.saturating_sub(self.written);
        if left == 0 {
            // Bytes past the tensor's end are counted, not written: the caller is told the
            // length was wrong.
            self.written += buf.len() as u64;
            return Ok(buf.len());
        }
        if self.piece_left == 0 && !buf.is_empty() {
            self.shards.close()?;
            self.shards.open()?;
            self.piece_left = left.min(self.shards.limit / self.row_bytes * self.row_bytes);
        }
        let take = self.piece_left.min(buf.len() as u64) as usize;
        self.shards.current.as_mut().expect("a shard is open").write(&buf[..take])?;
        self.written += take as u64;
        self.piece_left -= take as u64;
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.shards.current.as_mut().map_or(Ok(()), |shard| shard.out.flush())
    }
}

/// Writes `rdrr.json` and `shard-NNNNN.bin` files into one folder.
pub struct RdrrWriter {
    tensors: Vec<TensorEntry>,
    names: HashSet<String>,
    shards: Shards,
}

impl RdrrWriter {
    /// Starts a model in `dir` (created if needed), with shards of at most `shard_limit`
    /// bytes ([`super::MAX_SHARD_BYTES`] outside tests).
    pub fn create(dir: &Path, shard_limit: u64) -> Result<RdrrWriter, RdrrWriteError> {
        fs::create_dir_all(dir).map_err(|source| RdrrWriteError::Io { path: dir.to_path_buf(), source })?;
        Ok(RdrrWriter {
            tensors: Vec::new(),
            names: HashSet::new(),
            shards: Shards { dir: dir.to_path_buf(), limit: shard_limit, done: Vec::new(), current: None },
        })
    }

    /// Adds a tensor of `ty` with ggml-order `dims` (`dims[0]` the row length): `fill` must
    /// write exactly the bytes its type and shape take, in ggml's block layout. A tensor
    /// larger than a shard spans shards, streamed into each in turn.
    pub fn add_tensor(
        &mut self,
        name: &str,
        ty: GgmlType,
        dims: &[u64],
        fill: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), RdrrWriteError> {
        let bytes = tensor_byte_size(name, dims, ty)
            .map_err(|source| RdrrWriteError::Shape { tensor: name.to_string(), source })?;
        // The dims are nonzero and their product fits (tensor_byte_size checked both).
        let row_bytes = bytes / dims[1..].iter().product::<u64>();
        if row_bytes > self.shards.limit {
            return Err(RdrrWriteError::RowTooLarge {
                tensor: name.to_string(),
                row_bytes,
                limit: self.shards.limit,
            });
        }
        if !self.names.insert(name.to_string()) {
            return Err(RdrrWriteError::DuplicateTensor { tensor: name.to_string() });
        }
        let (shard, offset, piece) = self
            .shards
            .start_tensor(bytes, row_bytes)
            .map_err(|source| RdrrWriteError::Io { path: self.shards.path_in_use(), source })?;
        let mut sink = TensorSink {
            shards: &mut self.shards,
            row_bytes,
            expected: bytes,
            written: 0,
            piece_left: piece,
        };
        let filled = fill(&mut sink);
        let written = sink.written;
        filled.map_err(|source| RdrrWriteError::Io { path: self.shards.path_in_use(), source })?;
        if written != bytes {
            return Err(RdrrWriteError::WrongLength { tensor: name.to_string(), expected: bytes, written });
        }
        self.tensors.push(TensorEntry {
            name: name.to_string(),
            ty: ty.name().to_string(),
            shape: dims.iter().rev().copied().collect(),
            shard,
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
        self.shards
            .close()
            .map_err(|source| RdrrWriteError::Io { path: self.shards.path_in_use(), source })?;
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
                .done
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
        let path = self.shards.dir.join(MANIFEST_FILE);
        write_synced(&path, &json).map_err(|source| RdrrWriteError::Io { path: path.clone(), source })?;
        let manifest_file = WrittenFile {
            path,
            file_name: MANIFEST_FILE.to_string(),
            size: json.len() as u64,
            sha256: to_hex(&Sha256::digest(&json)),
        };
        let mut files = vec![manifest_file];
        files.append(&mut self.shards.done);
        Ok(WrittenRdrr { files })
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
