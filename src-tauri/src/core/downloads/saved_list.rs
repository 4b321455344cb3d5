use std::{fs, path::PathBuf};

use serde::{de::DeserializeOwned, Serialize};

/// A list the model manager keeps across restarts (its downloads, its conversions): a JSON
/// file in the app's data folder, replaced whole on every change.
#[derive(Debug, Clone)]
pub struct SavedList {
    path: PathBuf,
}

impl SavedList {
    pub fn new(path: PathBuf) -> SavedList {
        SavedList { path }
    }

    /// The list a previous run saved; a missing or unreadable one is an empty list.
    pub fn read<T: DeserializeOwned>(&self) -> Vec<T> {
        let Ok(json) = fs::read(&self.path) else { return Vec::new() };
        serde_json::from_slice(&json).unwrap_or_else(|error| {
            tracing::warn!(%error, path = %self.path.display(), "ignoring an unreadable saved list");
            Vec::new()
        })
    }

    /// Writes `entries` atomically: a crash mid-write keeps the previous list. A failure is
    /// logged, not returned: the list in memory stays right, only a restart would miss it.
    pub fn write<T: Serialize>(&self, entries: &[T]) {
        let json = serde_json::to_vec_pretty(entries).expect("the list always serializes");
        let temporary = self.path.with_extension("json.tmp");
        let written = self
            .path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| fs::write(&temporary, json))
            .and_then(|()| fs::rename(&temporary, &self.path));
        if let Err(error) = written {
            tracing::warn!(%error, path = %self.path.display(), "could not save the list");
        }
    }
}
