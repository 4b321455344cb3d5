use std::{
    io::{ErrorKind, Read},
    path::Path,
    time::Duration,
};

use doppler_engine::store::VerifiedFile;

use super::{
    cancel::sleep_unless_cancelled,
    part_file::{discard, PartFile},
    CancelToken, DownloadError, RetryPolicy,
};
use crate::hub::{HubClient, HubError, RepoFile};

const READ_CHUNK: usize = 256 * 1024;

/// A file of a Hub repository at a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub repo: String,
    pub revision: String,
    pub file: RepoFile,
}

/// What a download is doing, for progress display.
#[derive(Debug, Clone, PartialEq)]
pub enum TransferEvent {
    /// A partial download was found and checked; it goes on from byte `from`.
    Resumed {
        file: String,
        from: u64,
    },
    /// `received` more bytes arrived; `done` bytes of the file are on disk.
    Received {
        file: String,
        received: u64,
        done: u64,
    },
    /// The server refused to resume; the file starts over.
    Restarted {
        file: String,
    },
    Retrying {
        file: String,
        attempt: u32,
        wait: Duration,
        reason: String,
    },
}

/// How one request for the file ended when it did not bring it all.
enum Interruption {
    /// Worth another try (a dropped connection, a stall, a server error).
    Retry {
        reason: String,
        progressed: bool,
    },
    Fatal(DownloadError),
}

/// Downloads `remote` into a part file in `dir` (resuming what an earlier run left there),
/// retrying as `policy` says, and checks its size and sha256. The finished file stays in
/// `dir` for the store to take.
pub fn download_file(
    client: &HubClient,
    remote: &RemoteFile,
    dir: &Path,
    policy: &RetryPolicy,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(TransferEvent),
) -> Result<VerifiedFile, DownloadError> {
    let name = remote.file.path.clone();
    let mut part = PartFile::open(dir, remote)?;
    if part.len() > 0 {
        on_event(TransferEvent::Resumed { file: name.clone(), from: part.len() });
    }
    let mut expected_sha256 = remote.file.sha256.clone();
    let mut failures = 0u32;
    while part.len() < remote.file.size {
        if cancel.is_cancelled() {
            return Err(DownloadError::Cancelled { file: name });
        }
        let interruption = match fetch_once(client, remote, &mut part, &mut expected_sha256, cancel, on_event)
        {
            Ok(()) => continue,
            Err(interruption) => interruption,
        };
        match interruption {
            Interruption::Fatal(error) => return Err(error),
            Interruption::Retry { reason, progressed } => {
                failures = if progressed { 1 } else { failures + 1 };
                if failures >= policy.max_attempts {
                    return Err(DownloadError::GaveUp { file: name, attempts: failures, last: reason });
                }
                let wait = policy.backoff(failures);
                on_event(TransferEvent::Retrying { file: name.clone(), attempt: failures, wait, reason });
                if sleep_unless_cancelled(cancel, wait) {
                    return Err(DownloadError::Cancelled { file: name });
                }
            }
        }
    }
    let (sha256, path) = part.finish()?;
    if let Some(expected) = expected_sha256.filter(|expected| *expected != sha256) {
        discard(&path);
        return Err(DownloadError::ChecksumMismatch { file: name, expected, actual: sha256 });
    }
    let file_name = remote.file.file_name().to_string();
    Ok(VerifiedFile { path, file_name, sha256, size: remote.file.size })
}

/// One request for the rest of the file, appended to `part` as it arrives.
fn fetch_once(
    client: &HubClient,
    remote: &RemoteFile,
    part: &mut PartFile,
    expected_sha256: &mut Option<String>,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(TransferEvent),
) -> Result<(), Interruption> {
    let name = &remote.file.path;
    let size = remote.file.size;
    let offset = part.len();
    let opened = match client.open_file(&remote.repo, &remote.revision, name, offset) {
        Ok(opened) => opened,
        Err(HubError::RangeNotSatisfiable { .. }) if offset > 0 => {
            part.restart().map_err(Interruption::Fatal)?;
            on_event(TransferEvent::Restarted { file: name.clone() });
            return Err(Interruption::Retry {
                reason: format!("the server cannot resume from byte {offset} (HTTP 416); starting over"),
                progressed: false,
            });
        }
        Err(error) if error.is_transient() => {
            return Err(Interruption::Retry { reason: error.to_string(), progressed: false })
        }
        Err(source) => return Err(Interruption::Fatal(DownloadError::Hub { file: name.clone(), source })),
    };
    let size_error = |actual, source_of_actual| {
        Interruption::Fatal(DownloadError::SizeMismatch {
            file: name.clone(),
            expected: size,
            actual,
            source_of_actual,
        })
    };
    if let Some(linked) = opened.linked_size.filter(|&linked| linked != size) {
        return Err(size_error(linked, "its X-Linked-Size"));
    }
    if let Some(total) = opened.total.filter(|&total| total != size) {
        return Err(size_error(total, "the download's length"));
    }
    if expected_sha256.is_none() {
        expected_sha256.clone_from(&opened.linked_sha256);
    }
    if opened.start != offset {
        if opened.start != 0 {
            return Err(Interruption::Retry {
                reason: format!("asked for bytes from {offset} on, the server sent from {}", opened.start),
                progressed: false,
            });
        }
        // The server ignored the Range header and sends the whole file.
        part.restart().map_err(Interruption::Fatal)?;
        on_event(TransferEvent::Restarted { file: name.clone() });
    }
    let mut body = opened.body;
    let mut buffer = vec![0u8; READ_CHUNK];
    let mut progressed = false;
    loop {
        if cancel.is_cancelled() {
            return Err(Interruption::Fatal(DownloadError::Cancelled { file: name.clone() }));
        }
        let read = match body.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => {
                let reason = if error.kind() == ErrorKind::TimedOut || is_timeout(&error) {
                    format!("no data for {:?}", client.config().stall_timeout)
                } else {
                    format!("the connection broke: {error}")
                };
                return Err(Interruption::Retry { reason, progressed });
            }
        };
        if part.len() + read as u64 > size {
            return Err(size_error(part.len() + read as u64, "the bytes sent (at least)"));
        }
        part.append(&buffer[..read]).map_err(Interruption::Fatal)?;
        progressed = true;
        on_event(TransferEvent::Received { file: name.clone(), received: read as u64, done: part.len() });
    }
    if part.len() < size {
        return Err(Interruption::Retry {
            reason: format!("the connection closed at byte {} of {size}", part.len()),
            progressed,
        });
    }
    Ok(())
}

/// Whether a body read failed for want of data (reqwest reports its timeout inside the
/// I/O error).
fn is_timeout(error: &std::io::Error) -> bool {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
        .is_some_and(reqwest::Error::is_timeout)
}
