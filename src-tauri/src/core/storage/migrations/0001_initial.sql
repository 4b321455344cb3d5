-- Conversations, their messages as a tree, and app settings.

CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    -- 1 while the title follows the first message; a rename sets 0.
    auto_title INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    -- JSON of ConversationSettings: system prompt and sampling.
    settings TEXT NOT NULL,
    -- The model last used in this conversation (a model store name).
    model_id TEXT,
    -- The last message of the branch on screen; NULL while the conversation is empty.
    current_leaf_id INTEGER REFERENCES messages(id) ON DELETE SET NULL
);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    -- Edits and regenerations are siblings under the same parent; NULL for a first message.
    parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    -- Assistant replies only: how the generation went.
    model_id TEXT,
    finish_reason TEXT,
    prompt_tokens INTEGER,
    generated_tokens INTEGER,
    tokens_per_second REAL,
    time_to_first_token_ms REAL
);

CREATE INDEX messages_by_parent ON messages(conversation_id, parent_id);
CREATE INDEX conversations_by_recency ON conversations(updated_at DESC);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
