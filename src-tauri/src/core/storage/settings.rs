use rusqlite::{params, OptionalExtension};
use serde::{de::DeserializeOwned, Serialize};

use super::{Database, StorageError};

impl Database {
    /// The value stored under `key`, if any.
    pub fn setting<T: DeserializeOwned>(&self, key: &'static str) -> Result<Option<T>, StorageError> {
        let json: Option<String> = self.read(|conn| {
            Ok(conn
                .query_row("SELECT value FROM settings WHERE key = ?1", [key], |row| row.get(0))
                .optional()?)
        })?;
        json.map(|json| {
            serde_json::from_str(&json).map_err(|source| StorageError::BadJson { what: key, source })
        })
        .transpose()
    }

    pub fn set_setting<T: Serialize>(&self, key: &'static str, value: &T) -> Result<(), StorageError> {
        let json =
            serde_json::to_string(value).map_err(|source| StorageError::BadJson { what: key, source })?;
        self.write(|tx| {
            tx.execute("INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", params![key, json])?;
            Ok(())
        })
    }
}
