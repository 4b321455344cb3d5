use doppler_engine::{ChatMessage, GenerateOptions, SamplingParams};

use crate::core::storage::{ConversationSettings, Message, Role};

/// The chat the model sees: the system prompt, then the branch's messages, with runs of
/// same-role messages (a reply that never came) joined so roles alternate as templates expect.
pub(super) fn chat_messages(system_prompt: &str, branch: &[Message]) -> Vec<ChatMessage> {
    let mut chat: Vec<ChatMessage> = Vec::with_capacity(branch.len() + 1);
    if !system_prompt.trim().is_empty() {
        chat.push(ChatMessage::system(system_prompt.trim()));
    }
    for message in branch {
        let role = match message.role {
            Role::User => doppler_engine::Role::User,
            Role::Assistant => doppler_engine::Role::Assistant,
        };
        match chat.last_mut() {
            Some(previous) if previous.role == role => {
                previous.content.push_str("\n\n");
                previous.content.push_str(&message.content);
            }
            _ => chat.push(ChatMessage::new(role, message.content.clone())),
        }
    }
    chat
}

/// Generation options from a conversation's settings; `fresh_seed` serves when it has none.
pub(super) fn generate_options(settings: &ConversationSettings, fresh_seed: u64) -> GenerateOptions {
    GenerateOptions {
        sampling: SamplingParams {
            temperature: settings.temperature.max(0.0),
            top_k: settings.top_k,
            top_p: settings.top_p.clamp(0.0, 1.0),
            min_p: settings.min_p.clamp(0.0, 1.0),
            repetition_penalty: settings.repetition_penalty.max(0.0),
            seed: settings.seed.unwrap_or(fresh_seed),
            ..SamplingParams::default()
        },
        max_tokens: settings.max_tokens.max(1),
        ..GenerateOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::storage::Message;

    fn message(id: i64, role: Role, content: &str) -> Message {
        Message {
            id,
            conversation_id: 1,
            parent_id: None,
            role,
            content: content.to_string(),
            created_at: 0,
            generation: None,
        }
    }

    #[test]
    fn the_system_prompt_comes_first_and_roles_alternate() {
        let branch = [
            message(1, Role::User, "hi"),
            message(2, Role::User, "anyone?"),
            message(3, Role::Assistant, "yes"),
        ];
        let chat = chat_messages("  Be brief. ", &branch);
        assert_eq!(
            chat,
            vec![
                ChatMessage::system("Be brief."),
                ChatMessage::user("hi\n\nanyone?"),
                ChatMessage::assistant("yes")
            ]
        );
    }

    #[test]
    fn a_blank_system_prompt_is_left_out() {
        let chat = chat_messages(" \n", &[message(1, Role::User, "hi")]);
        assert_eq!(chat, vec![ChatMessage::user("hi")]);
    }

    #[test]
    fn a_conversation_seed_wins_over_the_fresh_one() {
        let mut settings =
            ConversationSettings { seed: Some(7), max_tokens: 0, ..ConversationSettings::default() };
        assert_eq!(generate_options(&settings, 99).sampling.seed, 7);
        assert_eq!(generate_options(&settings, 99).max_tokens, 1);
        settings.seed = None;
        assert_eq!(generate_options(&settings, 99).sampling.seed, 99);
    }
}
