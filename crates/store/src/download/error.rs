use std::{io, path::PathBuf};

use doppler_engine::store::{PathIoError, StoreError};

use crate::hub::HubError;

/// Why downloading one file failed. Each error names the file.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("downloading {file}: {source}")]
    Hub {
        file: String,
        #[source]
        source: HubError,
    },
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("another process is downloading {file} (lock {} is held)", lock.display())]
    InProgress { file: String, lock: PathBuf },
    #[error(
        "{file}: the Hub lists {expected} bytes but {source_of_actual} says {actual}; nothing was installed"
    )]
    SizeMismatch { file: String, expected: u64, actual: u64, source_of_actual: &'static str },
    #[error("checksum mismatch for {file}: sha256 is {actual}, expected {expected}; the download was deleted and nothing was installed")]
    ChecksumMismatch { file: String, expected: String, actual: String },
    #[error(
        "downloading {file} failed {attempts} times in a row (last: {last}); run the pull again to resume"
    )]
    GaveUp { file: String, attempts: u32, last: String },
    #[error("downloading {file} was cancelled; the next pull resumes it")]
    Cancelled { file: String },
}

impl DownloadError {
    pub(crate) fn io(operation: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        PathIoError::at(operation, path)
    }
}
