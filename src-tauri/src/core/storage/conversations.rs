use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{
    database::now_ms,
    models::{Conversation, ConversationId, ConversationSettings, ConversationSummary},
    Database, StorageError,
};

/// The title of a conversation before its first message names it.
pub const UNTITLED: &str = "New chat";
/// Characters of the first message an automatic title keeps.
const AUTO_TITLE_CHARS: usize = 60;
/// Characters of context a search snippet shows before the match.
const SNIPPET_LEAD: i64 = 40;
const SNIPPET_CHARS: i64 = 160;

const CONVERSATION_COLUMNS: &str = "id, title, created_at, updated_at, settings, model_id, current_leaf_id";

impl Database {
    pub fn create_conversation(&self, settings: &ConversationSettings) -> Result<Conversation, StorageError> {
        let settings_json = to_json(settings)?;
        self.write(|tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO conversations (title, created_at, updated_at, settings) VALUES (?1, ?2, ?2, ?3)",
                params![UNTITLED, now, settings_json],
            )?;
            conversation(tx, tx.last_insert_rowid())
        })
    }

    pub fn conversation(&self, id: ConversationId) -> Result<Conversation, StorageError> {
        self.read(|conn| conversation(conn, id))
    }

    /// Most recently active first. With a query: conversations whose title or any message
    /// contains it (ASCII case-insensitive), with an excerpt of the first matching message.
    pub fn list_conversations(&self, query: Option<&str>) -> Result<Vec<ConversationSummary>, StorageError> {
        self.read(|conn| {
            let query = query.map(str::trim).filter(|q| !q.is_empty());
            let summary = |row: &Row| Ok(ConversationSummary { id: row.get(0)?, title: row.get(1)?, updated_at: row.get(2)?, snippet: row.get(3)? });
            let rows = match query {
                None => {
                    let mut statement = conn.prepare("SELECT id, title, updated_at, NULL FROM conversations ORDER BY updated_at DESC, id DESC")?;
                    let rows = statement.query_map([], summary)?.collect::<Result<Vec<_>, _>>()?;
                    rows
                }
                Some(query) => {
                    let mut statement = conn.prepare(
                        "WITH matches AS (
                             SELECT c.id, c.title, c.updated_at,
                                    (SELECT substr(m.content, max(instr(lower(m.content), lower(?1)) - ?2, 1), ?3)
                                       FROM messages m
                                      WHERE m.conversation_id = c.id AND instr(lower(m.content), lower(?1)) > 0
                                      ORDER BY m.id LIMIT 1) AS snippet
                               FROM conversations c)
                         SELECT id, title, updated_at, snippet FROM matches
                          WHERE instr(lower(title), lower(?1)) > 0 OR snippet IS NOT NULL
                          ORDER BY updated_at DESC, id DESC",
                    )?;
                    let rows = statement.query_map(params![query, SNIPPET_LEAD, SNIPPET_CHARS], summary)?.collect::<Result<Vec<_>, _>>()?;
                    rows
                }
            };
            Ok(rows)
        })
    }

    /// Names the conversation; its title no longer follows the first message.
    pub fn rename_conversation(&self, id: ConversationId, title: &str) -> Result<Conversation, StorageError> {
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE conversations SET title = ?2, auto_title = 0 WHERE id = ?1",
                params![id, title],
            )?;
            if changed == 0 {
                return Err(StorageError::ConversationNotFound(id));
            }
            conversation(tx, id)
        })
    }

    /// Deletes the conversation and all its messages.
    pub fn delete_conversation(&self, id: ConversationId) -> Result<(), StorageError> {
        self.write(|tx| match tx.execute("DELETE FROM conversations WHERE id = ?1", [id])? {
            0 => Err(StorageError::ConversationNotFound(id)),
            _ => Ok(()),
        })
    }

    pub fn update_conversation_settings(
        &self,
        id: ConversationId,
        settings: &ConversationSettings,
    ) -> Result<Conversation, StorageError> {
        let settings_json = to_json(settings)?;
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE conversations SET settings = ?2 WHERE id = ?1",
                params![id, settings_json],
            )?;
            if changed == 0 {
                return Err(StorageError::ConversationNotFound(id));
            }
            conversation(tx, id)
        })
    }
}

pub(super) fn conversation(conn: &Connection, id: ConversationId) -> Result<Conversation, StorageError> {
    let row = conn
        .query_row(&format!("SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?1"), [id], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get::<_, String>(4)?,
                row.get(5)?,
                row.get(6)?,
            ))
        })
        .optional()?
        .ok_or(StorageError::ConversationNotFound(id))?;
    let (id, title, created_at, updated_at, settings_json, model_id, current_leaf_id) = row;
    let settings = serde_json::from_str(&settings_json)
        .map_err(|source| StorageError::BadJson { what: "conversation settings", source })?;
    Ok(Conversation { id, title, created_at, updated_at, settings, model_id, current_leaf_id })
}

/// The title a conversation gets from its first message: its first line, shortened.
pub(super) fn auto_title(first_message: &str) -> String {
    let line = first_message.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or(UNTITLED);
    match line.char_indices().nth(AUTO_TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_string(),
    }
}

fn to_json(settings: &ConversationSettings) -> Result<String, StorageError> {
    serde_json::to_string(settings)
        .map_err(|source| StorageError::BadJson { what: "conversation settings", source })
}
