//! A download in progress: `<downloads>/<id>-<file name>.part` holds the bytes received so
//! far, `….part.json` says which file of which repository and revision they belong to (and
//! its size and sha256), so a later process resumes only the very same file.

use std::{
    fs::{self, File, OpenOptions},
    io::{Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
};

use doppler_engine::store::{hash_into, to_hex, InstallLock};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{DownloadError, RemoteFile};

/// A state file is a few hundred bytes; anything larger is not ours.
const MAX_STATE_BYTES: u64 = 64 * 1024;
const MAX_NAME_CHARS: usize = 100;

#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct PartState {
    repo: String,
    revision: String,
    path: String,
    size: u64,
    sha256: Option<String>,
}

/// Where `remote`'s partial download lives in `dir`.
pub fn part_path(dir: &Path, remote: &RemoteFile) -> PathBuf {
    let identity = format!("{}@{}/{}", remote.repo, remote.revision, remote.file.path);
    let id = &to_hex(&Sha256::digest(identity.as_bytes()))[..16];
    let readable: String = remote
        .file
        .file_name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .take(MAX_NAME_CHARS)
        .collect();
    dir.join(format!("{id}-{readable}.part"))
}

/// The state file beside a part file.
pub fn state_path(part: &Path) -> PathBuf {
    with_suffix(part, ".json")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The open part file, its bytes hashed so far.
pub(crate) struct PartFile {
    pub path: PathBuf,
    file: File,
    hasher: Sha256,
    len: u64,
    _lock: InstallLock,
}

impl PartFile {
    /// Opens (or starts) `remote`'s part file in `dir`, keeping what it holds when its state
    /// file names this same file, and hashing those bytes again.
    pub fn open(dir: &Path, remote: &RemoteFile) -> Result<PartFile, DownloadError> {
        fs::create_dir_all(dir).map_err(DownloadError::io("creating", dir))?;
        let path = part_path(dir, remote);
        let lock_path = with_suffix(&path, ".lock");
        let lock = InstallLock::try_acquire(&lock_path)?
            .ok_or_else(|| DownloadError::InProgress { file: remote.file.path.clone(), lock: lock_path })?;
        let state = PartState {
            repo: remote.repo.clone(),
            revision: remote.revision.clone(),
            path: remote.file.path.clone(),
            size: remote.file.size,
            sha256: remote.file.sha256.clone(),
        };
        let state_path = state_path(&path);
        let same_file = read_state(&state_path).is_some_and(|stored| stored == state);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(DownloadError::io("opening", &path))?;
        let mut len = file.metadata().map_err(DownloadError::io("reading", &path))?.len();
        if !same_file || len > remote.file.size {
            file.set_len(0).map_err(DownloadError::io("truncating", &path))?;
            len = 0;
            write_state(&state_path, &state)?;
        }
        let mut hasher = Sha256::new();
        let hashed =
            hash_into(&mut hasher, &mut (&file).take(len)).map_err(DownloadError::io("reading", &path))?;
        if hashed != len {
            return Err(DownloadError::io("reading", &path)(std::io::ErrorKind::UnexpectedEof.into()));
        }
        file.seek(SeekFrom::End(0)).map_err(DownloadError::io("seeking in", &path))?;
        Ok(PartFile { path, file, hasher, len, _lock: lock })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn append(&mut self, bytes: &[u8]) -> Result<(), DownloadError> {
        self.file.write_all(bytes).map_err(DownloadError::io("writing", &self.path))?;
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Drops what was received: the next bytes are the file's first.
    pub fn restart(&mut self) -> Result<(), DownloadError> {
        self.file.set_len(0).map_err(DownloadError::io("truncating", &self.path))?;
        self.file.seek(SeekFrom::Start(0)).map_err(DownloadError::io("seeking in", &self.path))?;
        self.hasher = Sha256::new();
        self.len = 0;
        Ok(())
    }

    /// Flushes the file to disk: its sha256.
    pub fn finish(self) -> Result<(String, PathBuf), DownloadError> {
        self.file.sync_all().map_err(DownloadError::io("syncing", &self.path))?;
        Ok((to_hex(&self.hasher.finalize()), self.path))
    }
}

/// Removes a part file and its state: the next download of it starts over.
pub(crate) fn discard(part: &Path) {
    for path in [part.to_path_buf(), state_path(part)] {
        if let Err(error) = fs::remove_file(&path) {
            tracing::warn!(path = %path.display(), %error, "could not remove a discarded download");
        }
    }
}

fn read_state(path: &Path) -> Option<PartState> {
    let mut text = String::new();
    File::open(path).ok()?.take(MAX_STATE_BYTES).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_state(path: &Path, state: &PartState) -> Result<(), DownloadError> {
    let json = serde_json::to_vec_pretty(state).expect("a download state always serializes");
    let mut file = File::create(path).map_err(DownloadError::io("creating", path))?;
    file.write_all(&json).map_err(DownloadError::io("writing", path))?;
    file.sync_all().map_err(DownloadError::io("syncing", path))
}
