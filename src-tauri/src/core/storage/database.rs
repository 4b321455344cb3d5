use std::{
    fs, io,
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};
use serde::Serialize;

use super::{
    migrations::{migrate, schema_version, LATEST_VERSION},
    OpenError, StorageError,
};

/// The app's database: one connection, shared by the commands and the engine worker's
/// completions (each write is a short transaction).
pub struct Database {
    conn: Mutex<Connection>,
    path: PathBuf,
}

pub struct OpenedDatabase {
    pub database: Database,
    /// Set when the file at the path was damaged and a fresh database replaced it.
    pub recovered: Option<RecoveredDatabase>,
}

/// A damaged database that was moved aside, for the message to the user.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredDatabase {
    pub moved_to: PathBuf,
    pub reason: String,
}

/// Why one attempt to open the file failed.
enum Attempt {
    /// SQLite says the file is not a sound database: it may be moved aside.
    Corrupt(String),
    Failed(OpenError),
}

impl Database {
    /// Opens (creating it if needed) and migrates the database at `path`. A file SQLite
    /// reports damaged is renamed `<name>.corrupt-<unix seconds>` and a new one is started.
    pub fn open(path: &Path) -> Result<OpenedDatabase, OpenError> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)
                .map_err(|source| OpenError::CreateDirectory { path: dir.to_path_buf(), source })?;
        }
        let recovered = match open_checked(path) {
            Ok(conn) => return Ok(OpenedDatabase { database: Database::new(conn, path), recovered: None }),
            Err(Attempt::Failed(error)) => return Err(error),
            Err(Attempt::Corrupt(reason)) => {
                let moved_to = move_aside(path)?;
                tracing::warn!(path = %path.display(), moved_to = %moved_to.display(), %reason, "damaged database moved aside");
                RecoveredDatabase { moved_to, reason }
            }
        };
        match open_checked(path) {
            Ok(conn) => {
                Ok(OpenedDatabase { database: Database::new(conn, path), recovered: Some(recovered) })
            }
            Err(Attempt::Failed(error)) => Err(error),
            Err(Attempt::Corrupt(reason)) => Err(OpenError::Sqlite {
                path: path.to_path_buf(),
                source: rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                    Some(reason),
                ),
            }),
        }
    }

    fn new(conn: Connection, path: &Path) -> Database {
        Database { conn: Mutex::new(conn), path: path.to_path_buf() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs reads on the connection.
    pub(super) fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        f(&self.lock())
    }

    /// Runs `f` in a transaction, committed when it returns `Ok` and rolled back otherwise.
    /// Immediate: it takes the write lock at once (waiting up to the busy timeout), so it
    /// cannot fail halfway on a lock another connection holds.
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&Transaction) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic mid-transaction rolled that transaction back; the connection is still sound.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn open_checked(path: &Path) -> Result<Connection, Attempt> {
    let failed = |source| Attempt::Failed(OpenError::Sqlite { path: path.to_path_buf(), source });
    let classify = |error: rusqlite::Error| match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Attempt::Corrupt(error.to_string()),
        _ => failed(error),
    };
    let mut conn = Connection::open(path).map_err(classify)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(classify)?;
    // The first read of the header: a file that is not SQLite fails here. A database from a
    // newer build is refused before anything is written to it.
    let found = schema_version(&conn).map_err(classify)?;
    if found > LATEST_VERSION {
        return Err(Attempt::Failed(OpenError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: LATEST_VERSION,
        }));
    }
    let journal_mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).map_err(classify)?;
    if !journal_mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%journal_mode, "the database did not switch to WAL");
    }
    conn.pragma_update(None, "foreign_keys", true).map_err(classify)?;
    let check: String = conn.query_row("PRAGMA quick_check", [], |row| row.get(0)).map_err(classify)?;
    if check != "ok" {
        return Err(Attempt::Corrupt(format!("integrity check failed: {check}")));
    }
    migrate(&mut conn).map_err(classify)?;
    Ok(conn)
}

/// Renames the database and its WAL and shared-memory files out of the way, keeping them
/// for the user; returns where the database went.
fn move_aside(path: &Path) -> Result<PathBuf, OpenError> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let moved_to = with_suffix(path, &format!(".corrupt-{stamp}"));
    fs::rename(path, &moved_to).map_err(|source| OpenError::MoveAside {
        path: path.to_path_buf(),
        moved_to: moved_to.clone(),
        source,
    })?;
    for companion in ["-wal", "-shm"] {
        let from = with_suffix(path, companion);
        match fs::rename(&from, with_suffix(&moved_to, companion)) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(OpenError::MoveAside { path: from, moved_to: moved_to.clone(), source })
            }
        }
    }
    Ok(moved_to)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Milliseconds since the Unix epoch, the timestamps the tables store.
pub(super) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
