use tauri::{AppHandle, Manager, State};

use super::{to_markdown, ConversationView};
use crate::core::{
    app::{AppSettings, AppState, CommandError},
    storage::{Conversation, ConversationId, ConversationSettings, ConversationSummary, MessageId},
};

#[tauri::command]
pub async fn list_conversations(
    state: State<'_, AppState>,
    query: Option<String>,
) -> Result<Vec<ConversationSummary>, CommandError> {
    Ok(state.db.list_conversations(query.as_deref())?)
}

/// A new empty conversation with the default system prompt and sampling.
#[tauri::command]
pub async fn create_conversation(state: State<'_, AppState>) -> Result<Conversation, CommandError> {
    let defaults = AppSettings::load(&state.db)?.conversation_defaults;
    Ok(state.db.create_conversation(&defaults)?)
}

#[tauri::command]
pub async fn get_conversation(
    state: State<'_, AppState>,
    id: ConversationId,
) -> Result<ConversationView, CommandError> {
    Ok(ConversationView::load(&state.db, id)?)
}

#[tauri::command]
pub async fn rename_conversation(
    state: State<'_, AppState>,
    id: ConversationId,
    title: String,
) -> Result<Conversation, CommandError> {
    let title = title.trim();
    let title = if title.is_empty() { "Untitled" } else { title };
    Ok(state.db.rename_conversation(id, title)?)
}

#[tauri::command]
pub async fn delete_conversation(state: State<'_, AppState>, id: ConversationId) -> Result<(), CommandError> {
    Ok(state.db.delete_conversation(id)?)
}

#[tauri::command]
pub async fn update_conversation_settings(
    state: State<'_, AppState>,
    id: ConversationId,
    settings: ConversationSettings,
) -> Result<Conversation, CommandError> {
    Ok(state.db.update_conversation_settings(id, &settings)?)
}

/// Shows the branch through `message_id` (the "‹ 2 / 3 ›" switcher).
#[tauri::command]
pub async fn select_branch(
    state: State<'_, AppState>,
    conversation_id: ConversationId,
    message_id: MessageId,
) -> Result<ConversationView, CommandError> {
    state.db.select_branch(conversation_id, message_id)?;
    Ok(ConversationView::load(&state.db, conversation_id)?)
}

/// Saves the branch on screen as Markdown where the user picks in a native dialog; returns
/// whether a file was written.
#[tauri::command]
pub async fn export_conversation(
    app: AppHandle,
    window: tauri::WebviewWindow,
    id: ConversationId,
) -> Result<bool, CommandError> {
    let view = ConversationView::load(&app.state::<AppState>().db, id)?;
    let file_name = format!("{}.md", view.conversation.title.replace(['/', '\\', ':', '\0'], "-"));
    let dialog = rfd::AsyncFileDialog::new()
        .set_title("Export conversation")
        .set_file_name(file_name)
        .add_filter("Markdown", &["md"])
        .set_parent(&window);
    let Some(file) = dialog.save_file().await else { return Ok(false) };
    file.write(to_markdown(&view).as_bytes()).await?;
    Ok(true)
}
