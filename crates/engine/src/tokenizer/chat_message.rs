use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Who speaks a chat message. Serialized as the lowercase name chat templates test for
/// (`"system"`, `"user"`, `"assistant"`), or as the given name for any other role.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    System,
    User,
    Assistant,
    Other(String),
}

impl Role {
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Other(name) => name,
        }
    }
}

impl From<&str> for Role {
    fn from(name: &str) -> Role {
        match name {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => Role::Other(other.to_string()),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Role, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(Role::from(name.as_str()))
    }
}

/// One turn of a conversation, as chat templates see it (`message.role`, `message.content`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> ChatMessage {
        ChatMessage { role, content: content.into() }
    }

    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::Assistant, content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_serialize_as_template_names() {
        let message = ChatMessage::new(Role::Other("tool".into()), "42");
        let json = serde_json::to_string(&[ChatMessage::user("hi"), message.clone()]).unwrap();
        assert_eq!(json, r#"[{"role":"user","content":"hi"},{"role":"tool","content":"42"}]"#);
        let back: Vec<ChatMessage> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [ChatMessage::user("hi"), message]);
        assert_eq!(Role::from("assistant"), Role::Assistant);
    }
}
