use std::sync::Arc;

use tauri::{ipc::Channel, State, Window};

use super::{GenerationEvent, GenerationSink, ReplyTarget, SendReceipt};
use crate::core::{
    app::{AppState, CommandError},
    engine::{GenerationId, QueueView},
    storage::{ConversationId, MessageId},
};

/// A generation's events go to the webview over its own channel, in order.
struct ChannelSink(Channel<GenerationEvent>);

impl GenerationSink for ChannelSink {
    fn send(&self, event: GenerationEvent) {
        // Fails only once the webview is gone; the reply is saved all the same.
        if let Err(error) = self.0.send(event) {
            tracing::debug!(%error, "a generation event found no webview");
        }
    }
}

fn target(window: &Window, model_id: String, on_event: Channel<GenerationEvent>) -> ReplyTarget {
    ReplyTarget { model_id, owner: window.label().to_string(), sink: Arc::new(ChannelSink(on_event)) }
}

#[tauri::command]
pub async fn send_message(
    state: State<'_, AppState>,
    window: Window,
    conversation_id: ConversationId,
    content: String,
    model_id: String,
    on_event: Channel<GenerationEvent>,
) -> Result<SendReceipt, CommandError> {
    Ok(state.chat.send(conversation_id, &content, target(&window, model_id, on_event))?)
}

#[tauri::command]
pub async fn regenerate_reply(
    state: State<'_, AppState>,
    window: Window,
    conversation_id: ConversationId,
    user_message_id: MessageId,
    model_id: String,
    on_event: Channel<GenerationEvent>,
) -> Result<GenerationId, CommandError> {
    Ok(state.chat.regenerate(conversation_id, user_message_id, target(&window, model_id, on_event))?)
}

#[tauri::command]
pub async fn edit_and_resend(
    state: State<'_, AppState>,
    window: Window,
    conversation_id: ConversationId,
    message_id: MessageId,
    content: String,
    model_id: String,
    on_event: Channel<GenerationEvent>,
) -> Result<SendReceipt, CommandError> {
    Ok(state.chat.edit_and_resend(
        conversation_id,
        message_id,
        &content,
        target(&window, model_id, on_event),
    )?)
}

#[tauri::command]
pub async fn stop_generation(
    state: State<'_, AppState>,
    generation_id: GenerationId,
) -> Result<bool, CommandError> {
    Ok(state.chat.stop(generation_id))
}

#[tauri::command]
pub async fn generation_queue(state: State<'_, AppState>) -> Result<QueueView, CommandError> {
    Ok(state.worker.queue())
}
