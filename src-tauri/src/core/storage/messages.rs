use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{
    conversations::{auto_title, conversation},
    database::now_ms,
    models::{
        ConversationId, FinishReason, GenerationStats, Message, MessageId, NewReply, Role, ThreadMessage,
    },
    Database, StorageError,
};

const MESSAGE_COLUMNS: &str =
    "id, conversation_id, parent_id, role, content, created_at, model_id, finish_reason, prompt_tokens, generated_tokens, tokens_per_second, time_to_first_token_ms";

impl Database {
    /// Adds a user message under `parent_id` (`None`: a first message) and makes it the end
    /// of the branch on screen. A second child of the same parent is an edit: a new branch.
    pub fn add_user_message(
        &self,
        conversation_id: ConversationId,
        parent_id: Option<MessageId>,
        content: &str,
    ) -> Result<Message, StorageError> {
        self.write(|tx| {
            conversation(tx, conversation_id)?;
            if let Some(parent_id) = parent_id {
                message(tx, conversation_id, parent_id)?;
            }
            let now = now_ms();
            tx.execute(
                "INSERT INTO messages (conversation_id, parent_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![conversation_id, parent_id, Role::User.as_str(), content, now],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute("UPDATE conversations SET current_leaf_id = ?2, updated_at = ?3 WHERE id = ?1", params![conversation_id, id, now])?;
            if parent_id.is_none() {
                tx.execute("UPDATE conversations SET title = ?2 WHERE id = ?1 AND auto_title = 1", params![conversation_id, auto_title(content)])?;
            }
            message(tx, conversation_id, id)
        })
    }

    /// Commits a finished (or stopped) reply under its user message and shows its branch.
    pub fn add_reply(&self, reply: &NewReply) -> Result<Message, StorageError> {
        self.write(|tx| {
            let id = insert_reply(tx, reply.conversation_id, reply.parent_id, &reply.stats.model_id)?;
            complete_reply(tx, reply.conversation_id, id, &reply.content, &reply.stats)?;
            message(tx, reply.conversation_id, id)
        })
    }

    /// Starts a reply to user message `parent_id` as an empty assistant message, shown at the end
    /// of its branch, so that its text can be saved as it streams in (`save_reply_text`) and
    /// survives a crash; `finish_reply` completes it.
    pub fn begin_reply(
        &self,
        conversation_id: ConversationId,
        parent_id: MessageId,
        model_id: &str,
    ) -> Result<Message, StorageError> {
        self.write(|tx| {
            let id = insert_reply(tx, conversation_id, parent_id, model_id)?;
            message(tx, conversation_id, id)
        })
    }

    /// Saves the text of a reply begun with `begin_reply` and not finished yet.
    pub fn save_reply_text(
        &self,
        conversation_id: ConversationId,
        id: MessageId,
        content: &str,
    ) -> Result<(), StorageError> {
        self.write(|tx| {
            let updated = tx.execute(
                "UPDATE messages SET content = ?3 WHERE id = ?1 AND conversation_id = ?2 AND role = 'assistant' AND finish_reason IS NULL",
                params![id, conversation_id, content],
            )?;
            match updated {
                1 => Ok(()),
                _ => Err(StorageError::MessageNotFound { conversation: conversation_id, message: id }),
            }
        })
    }

    /// Completes a reply begun with `begin_reply` with its final text and how it went.
    pub fn finish_reply(
        &self,
        conversation_id: ConversationId,
        id: MessageId,
        content: &str,
        stats: &GenerationStats,
    ) -> Result<Message, StorageError> {
        self.write(|tx| {
            complete_reply(tx, conversation_id, id, content, stats)?;
            message(tx, conversation_id, id)
        })
    }

    /// Removes a begun reply that never produced text, showing its user message again.
    pub fn discard_reply(&self, conversation_id: ConversationId, id: MessageId) -> Result<(), StorageError> {
        self.write(|tx| {
            let reply = message(tx, conversation_id, id)?;
            tx.execute(
                "UPDATE conversations SET current_leaf_id = ?3 WHERE id = ?1 AND current_leaf_id = ?2",
                params![conversation_id, id, reply.parent_id],
            )?;
            tx.execute("DELETE FROM messages WHERE id = ?1 AND finish_reason IS NULL", params![id])?;
            Ok(())
        })
    }

    /// Marks the replies a previous run left unfinished (the app ended or was killed while they
    /// streamed) as interrupted, keeping their saved text; returns how many there were.
    pub fn mark_interrupted_replies(&self) -> Result<usize, StorageError> {
        self.write(|tx| {
            Ok(tx.execute(
                "UPDATE messages SET finish_reason = ?1 WHERE role = 'assistant' AND finish_reason IS NULL",
                params![FinishReason::Interrupted.as_str()],
            )?)
        })
    }

    pub fn message(&self, conversation_id: ConversationId, id: MessageId) -> Result<Message, StorageError> {
        self.read(|conn| message(conn, conversation_id, id))
    }

    /// The messages from the first one down to `id`, in order.
    pub fn path_to(
        &self,
        conversation_id: ConversationId,
        id: MessageId,
    ) -> Result<Vec<Message>, StorageError> {
        self.read(|conn| path_to(conn, conversation_id, id))
    }

    /// The branch on screen, first message first, each with its alternatives.
    pub fn thread(&self, conversation_id: ConversationId) -> Result<Vec<ThreadMessage>, StorageError> {
        self.read(|conn| {
            let Some(leaf) = conversation(conn, conversation_id)?.current_leaf_id else {
                return Ok(Vec::new());
            };
            let mut siblings = conn.prepare(
                "SELECT id FROM messages WHERE conversation_id = ?1 AND parent_id IS ?2 ORDER BY id",
            )?;
            path_to(conn, conversation_id, leaf)?
                .into_iter()
                .map(|message| {
                    let sibling_ids = siblings
                        .query_map(params![conversation_id, message.parent_id], |row| row.get(0))?
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(ThreadMessage { message, sibling_ids })
                })
                .collect()
        })
    }

    /// Shows the branch through `id`: below it, the most recent message at each step.
    pub fn select_branch(&self, conversation_id: ConversationId, id: MessageId) -> Result<(), StorageError> {
        self.write(|tx| {
            message(tx, conversation_id, id)?;
            let mut leaf = id;
            let mut latest_child = tx.prepare(
                "SELECT id FROM messages WHERE parent_id = ?1 AND id > ?1 ORDER BY id DESC LIMIT 1",
            )?;
            while let Some(child) = latest_child.query_row([leaf], |row| row.get(0)).optional()? {
                leaf = child;
            }
            tx.execute(
                "UPDATE conversations SET current_leaf_id = ?2 WHERE id = ?1",
                params![conversation_id, leaf],
            )?;
            Ok(())
        })
    }
}

/// An empty assistant message under user message `parent_id`, made the end of the branch on screen.
fn insert_reply(
    tx: &Connection,
    conversation_id: ConversationId,
    parent_id: MessageId,
    model_id: &str,
) -> Result<MessageId, StorageError> {
    let parent = message(tx, conversation_id, parent_id)?;
    if parent.role != Role::User {
        return Err(StorageError::NotAUserMessage(parent.id));
    }
    let now = now_ms();
    tx.execute(
        "INSERT INTO messages (conversation_id, parent_id, role, content, created_at, model_id) VALUES (?1, ?2, ?3, '', ?4, ?5)",
        params![conversation_id, parent_id, Role::Assistant.as_str(), now, model_id],
    )?;
    let id = tx.last_insert_rowid();
    tx.execute(
        "UPDATE conversations SET current_leaf_id = ?2, updated_at = ?3, model_id = ?4 WHERE id = ?1",
        params![conversation_id, id, now, model_id],
    )?;
    Ok(id)
}

/// Gives an unfinished reply its final text and how it went.
fn complete_reply(
    tx: &Connection,
    conversation_id: ConversationId,
    id: MessageId,
    content: &str,
    stats: &GenerationStats,
) -> Result<(), StorageError> {
    let updated = tx.execute(
        "UPDATE messages SET content = ?3, model_id = ?4, finish_reason = ?5, prompt_tokens = ?6, generated_tokens = ?7, tokens_per_second = ?8, time_to_first_token_ms = ?9
         WHERE id = ?1 AND conversation_id = ?2 AND role = 'assistant' AND finish_reason IS NULL",
        params![
            id,
            conversation_id,
            content,
            stats.model_id,
            stats.finish_reason.as_str(),
            stats.prompt_tokens,
            stats.generated_tokens,
            stats.tokens_per_second,
            stats.time_to_first_token_ms
        ],
    )?;
    if updated != 1 {
        return Err(StorageError::MessageNotFound { conversation: conversation_id, message: id });
    }
    tx.execute("UPDATE conversations SET updated_at = ?2 WHERE id = ?1", params![conversation_id, now_ms()])?;
    Ok(())
}

fn message(
    conn: &Connection,
    conversation_id: ConversationId,
    id: MessageId,
) -> Result<Message, StorageError> {
    conn.query_row(
        &format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?1 AND conversation_id = ?2"),
        params![id, conversation_id],
        message_from_row,
    )
    .optional()?
    .ok_or(StorageError::MessageNotFound { conversation: conversation_id, message: id })
}

fn path_to(
    conn: &Connection,
    conversation_id: ConversationId,
    id: MessageId,
) -> Result<Vec<Message>, StorageError> {
    let mut statement = conn.prepare(&format!(
        "WITH RECURSIVE path(id, depth) AS (
             SELECT id, 0 FROM messages WHERE id = ?1 AND conversation_id = ?2
             UNION ALL
             SELECT m.parent_id, path.depth + 1 FROM messages m JOIN path ON m.id = path.id
              -- parents are older than their children: a cycle can only be a damaged file
              WHERE m.parent_id IS NOT NULL AND m.parent_id < m.id)
         SELECT {MESSAGE_COLUMNS} FROM messages JOIN path USING (id) ORDER BY path.depth DESC"
    ))?;
    let path = statement
        .query_map(params![id, conversation_id], message_from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    if path.is_empty() {
        return Err(StorageError::MessageNotFound { conversation: conversation_id, message: id });
    }
    Ok(path)
}

fn message_from_row(row: &Row) -> rusqlite::Result<Message> {
    let role_text: String = row.get(3)?;
    let role = Role::parse(&role_text).ok_or_else(|| invalid_text(3, "role", &role_text))?;
    let finish_reason: Option<String> = row.get(7)?;
    let generation = match finish_reason {
        None => None,
        Some(reason) => Some(GenerationStats {
            model_id: row.get::<_, Option<String>>(6)?.unwrap_or_default(),
            finish_reason: FinishReason::parse(&reason)
                .ok_or_else(|| invalid_text(7, "finish_reason", &reason))?,
            prompt_tokens: row.get::<_, Option<u32>>(8)?.unwrap_or(0),
            generated_tokens: row.get::<_, Option<u32>>(9)?.unwrap_or(0),
            tokens_per_second: row.get::<_, Option<f64>>(10)?.unwrap_or(0.0),
            time_to_first_token_ms: row.get::<_, Option<f64>>(11)?.unwrap_or(0.0),
        }),
    };
    Ok(Message {
        id: row.get(0)?,
        conversation_id: row.get(1)?,
        parent_id: row.get(2)?,
        role,
        content: row.get(4)?,
        created_at: row.get(5)?,
        generation,
    })
}

fn invalid_text(column: usize, name: &str, value: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        rusqlite::types::Type::Text,
        format!("unknown {name} '{value}'").into(),
    )
}
