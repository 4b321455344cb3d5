//! Downloads users can trust: written to a `.part` file beside a small state file, resumed
//! with a Range request after a dropped connection, a stall or a killed process, retried with
//! backoff, hashed while written and checked against the Hub's sha256.

mod cancel;
mod error;
mod part_file;
mod rate;
mod retry;
mod transfer;

/// Stops a download from another thread (or its own progress callback); the partial file
/// stays for the next download to resume.
pub use doppler_engine::CancelToken;
pub use error::DownloadError;
pub use part_file::{part_path, state_path};
pub use rate::RateMeter;
pub use retry::RetryPolicy;
pub use transfer::{download_file, RemoteFile, TransferEvent};
