//! The request bodies of the chat and text completion endpoints, checked and turned into
//! what the runtime runs.

use doppler_engine::{ChatMessage, GenerateOptions, Role, SamplingParams};
use doppler_runtime::Prompt;
use serde::Deserialize;

use crate::api_error::{invalid, ApiError};

/// OpenAI allows at most this many stop sequences.
const MAX_STOP_SEQUENCES: usize = 4;

#[derive(Deserialize)]
pub struct ChatCompletionRequest {
    pub model: String,
    pub messages: Vec<WireMessage>,
    #[serde(flatten)]
    pub generation: GenerationFields,
    pub max_completion_tokens: Option<i64>,
}

#[derive(Deserialize)]
pub struct CompletionRequest {
    pub model: String,
    pub prompt: CompletionPrompt,
    #[serde(flatten)]
    pub generation: GenerationFields,
}

/// Fields both endpoints share.
#[derive(Deserialize)]
pub struct GenerationFields {
    #[serde(default)]
    pub stream: bool,
    pub stream_options: Option<StreamOptions>,
    pub stop: Option<StopSequences>,
    pub max_tokens: Option<i64>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    pub frequency_penalty: Option<f32>,
    pub presence_penalty: Option<f32>,
    pub n: Option<i64>,
}

#[derive(Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub enum StopSequences {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(untagged)]
pub enum CompletionPrompt {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
pub struct WireMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<MessageContent>,
}

/// A message's text, or its parts, of which only text parts are understood here.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

impl ChatCompletionRequest {
    pub fn prompt(&self) -> Result<Prompt, ApiError> {
        if self.messages.is_empty() {
            return Err(invalid("messages", "`messages` must hold at least one message"));
        }
        let messages = self.messages.iter().map(chat_message).collect::<Result<Vec<_>, _>>()?;
        Ok(Prompt::Chat(messages))
    }

    /// `max_completion_tokens` is the newer name of `max_tokens`; either may be given.
    pub fn max_tokens(&self) -> Result<Option<u32>, ApiError> {
        match self.max_completion_tokens {
            Some(value) => positive_tokens("max_completion_tokens", value).map(Some),
            None => self.generation.max_tokens(),
        }
    }
}

impl CompletionRequest {
    pub fn prompt(&self) -> Result<Prompt, ApiError> {
        let text = match &self.prompt {
            CompletionPrompt::One(text) => text,
            CompletionPrompt::Many(texts) if texts.len() == 1 => &texts[0],
            CompletionPrompt::Many(_) => {
                return Err(invalid(
                    "prompt",
                    "`prompt` must be one string; batches of prompts are not supported",
                ))
            }
        };
        if text.is_empty() {
            return Err(invalid("prompt", "`prompt` must not be empty"));
        }
        Ok(Prompt::Text(text.clone()))
    }
}

impl GenerationFields {
    pub fn max_tokens(&self) -> Result<Option<u32>, ApiError> {
        self.max_tokens.map(|value| positive_tokens("max_tokens", value)).transpose()
    }

    pub fn include_usage(&self) -> bool {
        self.stream_options.as_ref().is_some_and(|options| options.include_usage)
    }

    /// The engine's options; `max_tokens` (already checked) defaults to the whole context.
    pub fn options(&self, max_tokens: Option<u32>, context_len: u32) -> Result<GenerateOptions, ApiError> {
        if let Some(n) = self.n {
            if n != 1 {
                return Err(invalid("n", format!("`n` must be 1 (one choice per request), not {n}")));
            }
        }
        for (param, value) in
            [("frequency_penalty", self.frequency_penalty), ("presence_penalty", self.presence_penalty)]
        {
            if value.is_some_and(|value| value != 0.0) {
                return Err(ApiError::Unsupported(format!(
                    "`{param}` is not supported: DOPPLER's sampler has a multiplicative repetition penalty, \
                     not OpenAI's additive penalties; leave it out or set it to 0"
                )));
            }
        }
        let temperature = self.temperature.unwrap_or(1.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(invalid(
                "temperature",
                format!("`temperature` must be between 0 and 2, not {temperature}"),
            ));
        }
        let top_p = self.top_p.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(invalid("top_p", format!("`top_p` must be above 0 and at most 1, not {top_p}")));
        }
        let stop = match &self.stop {
            None => Vec::new(),
            Some(StopSequences::One(stop)) => vec![stop.clone()],
            Some(StopSequences::Many(stops)) => stops.clone(),
        };
        if stop.len() > MAX_STOP_SEQUENCES {
            return Err(invalid("stop", format!("`stop` holds at most {MAX_STOP_SEQUENCES} sequences")));
        }
        if stop.iter().any(String::is_empty) {
            return Err(invalid("stop", "a stop sequence must not be empty"));
        }
        Ok(GenerateOptions {
            sampling: SamplingParams {
                temperature,
                top_p,
                seed: self.seed.unwrap_or_else(fresh_seed),
                ..SamplingParams::default()
            },
            max_tokens: max_tokens.unwrap_or(context_len),
            stop,
            ignore_eos: false,
        })
    }
}

fn positive_tokens(param: &'static str, value: i64) -> Result<u32, ApiError> {
    u32::try_from(value)
        .ok()
        .filter(|&tokens| tokens > 0)
        .ok_or_else(|| invalid(param, format!("`{param}` must be a positive number of tokens, not {value}")))
}

fn chat_message(message: &WireMessage) -> Result<ChatMessage, ApiError> {
    let role = match message.role.as_str() {
        // OpenAI's newer name for the system role.
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => {
            return Err(invalid(
                "messages",
                format!("a message's role must be system, developer, user or assistant, not '{other}'"),
            ))
        }
    };
    let content = match &message.content {
        None => String::new(),
        Some(MessageContent::Text(text)) => text.clone(),
        Some(MessageContent::Parts(parts)) => {
            let mut text = String::new();
            for part in parts {
                match (part.kind.as_str(), &part.text) {
                    ("text", Some(part_text)) => text.push_str(part_text),
                    (kind, _) => {
                        return Err(ApiError::Unsupported(format!(
                            "message parts of type '{kind}' are not supported; send text"
                        )))
                    }
                }
            }
            text
        }
    };
    Ok(ChatMessage::new(role, content))
}

/// A seed for a request without one: different for every request, as OpenAI's are.
fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
