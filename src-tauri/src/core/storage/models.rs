use serde::{Deserialize, Serialize};

pub type ConversationId = i64;
pub type MessageId = i64;

/// A conversation's system prompt and sampling, stored as JSON so new fields get defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConversationSettings {
    pub system_prompt: String,
    pub temperature: f32,
    pub top_k: u32,
    pub top_p: f32,
    pub min_p: f32,
    pub repetition_penalty: f32,
    /// `None`: a fresh seed per reply.
    pub seed: Option<u64>,
    pub max_tokens: u32,
}

impl Default for ConversationSettings {
    fn default() -> Self {
        ConversationSettings {
            system_prompt: String::new(),
            temperature: 0.7,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repetition_penalty: 1.1,
            seed: None,
            max_tokens: 1024,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: ConversationId,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub settings: ConversationSettings,
    pub model_id: Option<String>,
    pub current_leaf_id: Option<MessageId>,
}

/// A row of the conversation list.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: ConversationId,
    pub title: String,
    pub updated_at: i64,
    /// Where a search matched a message: a short excerpt around the match.
    pub snippet: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    pub(super) fn parse(text: &str) -> Option<Role> {
        match text {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => None,
        }
    }
}

/// Why a reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn.
    Eos,
    MaxTokens,
    StopString,
    /// The user stopped it; the message holds what was generated until then.
    Cancelled,
    ContextFull,
    /// The engine failed mid-reply; the message holds what was generated until then.
    Failed,
    /// The app ended (or was killed) mid-reply; the message holds the text last saved.
    Interrupted,
}

impl FinishReason {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            FinishReason::Eos => "eos",
            FinishReason::MaxTokens => "max_tokens",
            FinishReason::StopString => "stop_string",
            FinishReason::Cancelled => "cancelled",
            FinishReason::ContextFull => "context_full",
            FinishReason::Failed => "failed",
            FinishReason::Interrupted => "interrupted",
        }
    }

    pub(super) fn parse(text: &str) -> Option<FinishReason> {
        [
            FinishReason::Eos,
            FinishReason::MaxTokens,
            FinishReason::StopString,
            FinishReason::Cancelled,
            FinishReason::ContextFull,
            FinishReason::Failed,
            FinishReason::Interrupted,
        ]
        .into_iter()
        .find(|reason| reason.as_str() == text)
    }
}

/// How an assistant reply was generated.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationStats {
    pub model_id: String,
    pub finish_reason: FinishReason,
    pub prompt_tokens: u32,
    pub generated_tokens: u32,
    pub tokens_per_second: f64,
    pub time_to_first_token_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: MessageId,
    pub conversation_id: ConversationId,
    pub parent_id: Option<MessageId>,
    pub role: Role,
    pub content: String,
    pub created_at: i64,
    /// Assistant replies only.
    pub generation: Option<GenerationStats>,
}

/// A message of the branch on screen, with its alternatives (itself included) for the
/// "‹ 2 / 3 ›" switcher.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMessage {
    #[serde(flatten)]
    pub message: Message,
    pub sibling_ids: Vec<MessageId>,
}

/// A finished reply to commit.
#[derive(Debug, Clone)]
pub struct NewReply {
    pub conversation_id: ConversationId,
    /// The user message it answers.
    pub parent_id: MessageId,
    pub content: String,
    pub stats: GenerationStats,
}
