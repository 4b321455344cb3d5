use std::{
    fs::{File, OpenOptions, TryLockError},
    path::{Path, PathBuf},
};

use super::StoreError;

/// An exclusive advisory lock on one model name, held while installing or removing it (or on
/// one download, while writing it).
/// The OS releases it when the process dies, so a crashed install never blocks the next one.
pub struct InstallLock {
    _file: File,
}

impl InstallLock {
    /// The lock, or `None` when another holder has it.
    pub fn try_acquire(lock_path: &Path) -> Result<Option<InstallLock>, StoreError> {
        let file = open_lock_file(lock_path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(InstallLock { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(source)) => Err(StoreError::io("locking", lock_path)(source)),
        }
    }

    /// Waits for the lock.
    pub(crate) fn acquire(lock_path: &Path) -> Result<InstallLock, StoreError> {
        let file = open_lock_file(lock_path)?;
        file.lock().map_err(StoreError::io("locking", lock_path))?;
        Ok(InstallLock { _file: file })
    }
}

/// Lock files are never deleted: deleting one while another process waits on it would let
/// two processes each lock a different file of the same name.
fn open_lock_file(lock_path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path)
        .map_err(StoreError::io("opening lock file", PathBuf::from(lock_path)))
}
