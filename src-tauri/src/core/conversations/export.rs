use super::ConversationView;
use crate::core::storage::Role;

/// The branch on screen as a Markdown document.
pub fn to_markdown(view: &ConversationView) -> String {
    let mut out = format!("# {}\n", view.conversation.title);
    if !view.conversation.settings.system_prompt.trim().is_empty() {
        out.push_str(&format!(
            "\n> System: {}\n",
            view.conversation.settings.system_prompt.trim().replace('\n', "\n> ")
        ));
    }
    for entry in &view.thread {
        let speaker = match entry.message.role {
            Role::User => "You".to_string(),
            Role::Assistant => entry
                .message
                .generation
                .as_ref()
                .map(|stats| stats.model_id.clone())
                .unwrap_or_else(|| "Assistant".to_string()),
        };
        out.push_str(&format!("\n## {speaker}\n\n{}\n", entry.message.content.trim_end()));
    }
    out
}
