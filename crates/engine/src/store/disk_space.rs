use std::path::Path;

use super::StoreError;

/// Fails with a clear error when the filesystem holding `dir` has less than `needed` bytes
/// free for us. Where the free space cannot be queried, the write itself will report it.
pub fn ensure_free_space(dir: &Path, needed: u64) -> Result<(), StoreError> {
    match fs4::available_space(dir) {
        Ok(available) if available < needed => {
            Err(StoreError::NotEnoughSpace { needed, available, path: dir.to_path_buf() })
        }
        Ok(_) => Ok(()),
        Err(error) => {
            tracing::debug!(dir = %dir.display(), %error, "free disk space unknown");
            Ok(())
        }
    }
}
