use std::{io, path::PathBuf};

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create the data directory {}: {source}", path.display())]
    CreateDirectory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the database {} is damaged and could not be moved aside to {}: {source}", path.display(), moved_to.display())]
    MoveAside {
        path: PathBuf,
        moved_to: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the database {} was written by a newer DOPPLER (schema version {found}; this build knows up to {supported}); update DOPPLER to open it", path.display())]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    #[error("cannot open the database {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

/// Why a read or write of conversations, messages or settings failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("conversation {0} does not exist")]
    ConversationNotFound(i64),
    #[error("message {message} does not exist in conversation {conversation}")]
    MessageNotFound { conversation: i64, message: i64 },
    #[error("a reply must follow a user message, and message {0} is not one")]
    NotAUserMessage(i64),
    #[error("stored {what} is not valid JSON: {source}")]
    BadJson {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}
