//! Atomic installs. A model is assembled in `<root>/tmp/<name>/<unique>/model/`, flushed to
//! disk, checked, and only then renamed to `<root>/models/<name>/`: a model directory is
//! either absent or complete. Whatever an interrupted install leaves under `tmp/<name>/` is
//! removed by the next process that holds that name's lock.

use std::{
    fs::{self, File},
    io::{self, BufWriter, Read, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::{SystemTime, UNIX_EPOCH},
};

use sha2::{Digest, Sha256};

use super::{
    checksum::to_hex,
    gguf_summary::summarize,
    lock::InstallLock,
    manifest::{ManifestFile, ModelManifest},
    InstalledModel, ModelStore, StoreError,
};

const COPY_CHUNK: usize = 1 << 20;

/// A private work directory for one install or removal of `name`; deleted when dropped.
pub(crate) struct Staging<'a> {
    store: &'a ModelStore,
    name: String,
    work_dir: PathBuf,
}

/// What a finished model file must match; `what` names it in errors.
pub(crate) struct Expected<'e> {
    pub what: &'e str,
    pub sha256: Option<&'e str>,
    pub size: Option<u64>,
}

impl<'a> Staging<'a> {
    /// Clears what earlier, interrupted work on `name` left behind, then makes a fresh work
    /// directory. Holding `name`'s lock is what makes the clearing safe.
    pub(crate) fn begin(
        store: &'a ModelStore,
        name: &str,
        _held: &InstallLock,
    ) -> Result<Staging<'a>, StoreError> {
        let area = store.staging_area(name);
        if area.exists() {
            fs::remove_dir_all(&area)
                .map_err(StoreError::io("removing leftovers of an interrupted install at", &area))?;
        }
        let work_dir = area.join(unique_dir_name());
        let staged_model = work_dir.join("model");
        fs::create_dir_all(&staged_model).map_err(StoreError::io("creating", &staged_model))?;
        Ok(Staging { store, name: name.to_string(), work_dir })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.work_dir
    }

    /// A directory for downloads that are deleted with the work directory.
    pub(crate) fn scratch_dir(&self) -> Result<PathBuf, StoreError> {
        let scratch = self.work_dir.join("scratch");
        fs::create_dir_all(&scratch).map_err(StoreError::io("creating", &scratch))?;
        Ok(scratch)
    }

    fn staged_model_dir(&self) -> PathBuf {
        self.work_dir.join("model")
    }

    pub(crate) fn create_model_file(&self, file_name: &str) -> Result<ModelFileWriter, StoreError> {
        let path = self.staged_model_dir().join(file_name);
        let file = File::create(&path).map_err(StoreError::io("creating", &path))?;
        Ok(ModelFileWriter {
            file: BufWriter::with_capacity(COPY_CHUNK, file),
            hasher: Sha256::new(),
            written: 0,
            file_name: file_name.to_string(),
            path,
        })
    }

    /// Moves an installed model's directory into the work directory, where it is deleted
    /// with it: the model disappears from the store in one rename.
    pub(crate) fn take_out(&self, model_dir: &Path) -> Result<(), StoreError> {
        let graveyard = self.work_dir.join("taken-out");
        fs::rename(model_dir, &graveyard).map_err(StoreError::io("moving out", model_dir))
    }

    /// Moves `src` (a file on the store's filesystem) into the staged model as `file_name`.
    pub(crate) fn adopt_model_file(&self, src: &Path, file_name: &str) -> Result<(), StoreError> {
        fs::rename(src, self.staged_model_dir().join(file_name)).map_err(StoreError::io("moving", src))
    }

    /// Checks the finished file, writes its manifest and moves the model into place,
    /// replacing an installed copy of the same name.
    pub(crate) fn commit(
        self,
        writer: ModelFileWriter,
        expected: &Expected,
        source: String,
    ) -> Result<InstalledModel, StoreError> {
        let file_name = writer.file_name.clone();
        let (sha256, size) = writer.finish()?;
        if let Some(expected_size) = expected.size.filter(|&expected_size| expected_size != size) {
            return Err(StoreError::SizeMismatch {
                what: expected.what.to_string(),
                expected: expected_size,
                actual: size,
            });
        }
        if let Some(expected_sha256) = expected.sha256.filter(|&expected_sha256| expected_sha256 != sha256) {
            return Err(StoreError::ChecksumMismatch {
                what: expected.what.to_string(),
                expected: expected_sha256.to_string(),
                actual: sha256,
            });
        }
        self.commit_checked(ManifestFile { file_name, sha256, size }, Vec::new(), expected.what, source)
    }

    /// Writes the manifest of the staged files (already checked) and moves the model into
    /// place, replacing an installed copy of the same name.
    pub(crate) fn commit_checked(
        self,
        first: ManifestFile,
        split_parts: Vec<ManifestFile>,
        what: &str,
        source: String,
    ) -> Result<InstalledModel, StoreError> {
        let staged_dir = self.staged_model_dir();
        let summary = summarize(&staged_dir.join(&first.file_name))
            .map_err(|source| StoreError::NotAModel { what: what.to_string(), source: Box::new(source) })?;
        let manifest = ModelManifest {
            name: self.name.clone(),
            file_name: first.file_name,
            sha256: first.sha256,
            size: first.size,
            source,
            architecture: summary.architecture,
            quantization: summary.quantization,
            added_unix_seconds: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
            split_parts,
        };
        manifest.write(&staged_dir)?;
        sync_dir(&staged_dir)?;
        let model_dir = self.store.model_dir(&self.name);
        if model_dir.exists() {
            self.take_out(&model_dir)?;
        }
        fs::rename(&staged_dir, &model_dir)
            .map_err(StoreError::io("moving the finished model to", &model_dir))?;
        sync_dir(&self.store.models_dir())?;
        Ok(InstalledModel::new(manifest, model_dir))
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if let Err(error) = fs::remove_dir_all(&self.work_dir) {
            tracing::warn!(dir = %self.work_dir.display(), %error, "could not remove a staging directory; the next install of this model removes it");
        }
        // Only succeeds once no other work directory of this name is left in it.
        let _ = fs::remove_dir(self.store.staging_area(&self.name));
    }
}

/// The staged model file; hashes what it writes.
pub(crate) struct ModelFileWriter {
    file: BufWriter<File>,
    hasher: Sha256,
    written: u64,
    file_name: String,
    path: PathBuf,
}

impl ModelFileWriter {
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Copies all of `reader` in, calling `on_progress` with the total written after each chunk.
    pub(crate) fn copy_from(
        &mut self,
        reader: &mut dyn Read,
        on_progress: &mut dyn FnMut(u64),
    ) -> io::Result<u64> {
        let mut buffer = vec![0u8; COPY_CHUNK];
        let mut copied = 0u64;
        loop {
            let read = match reader.read(&mut buffer) {
                Ok(0) => return Ok(copied),
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            self.write_all(&buffer[..read])?;
            copied += read as u64;
            on_progress(self.written);
        }
    }

    /// Flushes the file to disk: (sha256, size).
    fn finish(self) -> Result<(String, u64), StoreError> {
        let file = self
            .file
            .into_inner()
            .map_err(|error| StoreError::io("writing", &self.path)(error.into_error()))?;
        file.sync_all().map_err(StoreError::io("syncing", &self.path))?;
        Ok((to_hex(&self.hasher.finalize()), self.written))
    }
}

impl Write for ModelFileWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.file.write(buf)?;
        self.hasher.update(&buf[..written]);
        self.written += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

fn unique_dir_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.subsec_nanos());
    format!("{}-{}-{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Makes a directory's entries (a created file, a rename) durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir).and_then(|handle| handle.sync_all()).map_err(StoreError::io("syncing", dir))
}

/// Elsewhere (Windows) a directory cannot be opened to flush it; the renames stay as durable
/// as the OS makes them.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<(), StoreError> {
    Ok(())
}
