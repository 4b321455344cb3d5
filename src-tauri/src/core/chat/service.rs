use std::{
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use super::{prompt, reply_observer::ReplyObserver, ChatError, GenerationSink, SendReceipt};
use crate::core::{
    backends::{RemoteBackends, RemoteModelId},
    engine::{
        EngineKey, EngineWorker, GenerationId, GenerationObserver, GenerationRequest, Prompt, ReplyKey,
    },
    profiler::ProfilerService,
    storage::{ConversationId, Database, MessageId, Role},
};

/// Chat operations, free of any window: the Tauri commands are thin wrappers over these.
pub struct ChatService {
    db: Arc<Database>,
    worker: Arc<EngineWorker>,
    /// Times the replies for the profiler view, where there is one.
    profiler: Option<Arc<ProfilerService>>,
    /// Models whose id names a remote backend reply through it instead of the worker.
    remote: Option<Arc<RemoteBackends>>,
}

/// Who asks for a reply, with which model, and where its events go.
pub struct ReplyTarget {
    pub model_id: String,
    /// The asking window's label: closing it cancels the generation.
    pub owner: String,
    pub sink: Arc<dyn GenerationSink>,
}

impl ChatService {
    pub fn new(db: Arc<Database>, worker: Arc<EngineWorker>) -> ChatService {
        ChatService { db, worker, profiler: None, remote: None }
    }

    pub fn with_profiler(self, profiler: Arc<ProfilerService>) -> ChatService {
        ChatService { profiler: Some(profiler), ..self }
    }

    pub fn with_remote_backends(self, remote: Arc<RemoteBackends>) -> ChatService {
        ChatService { remote: Some(remote), ..self }
    }

    /// Commits `content` at the end of the branch on screen and queues the reply.
    pub fn send(
        &self,
        conversation_id: ConversationId,
        content: &str,
        target: ReplyTarget,
    ) -> Result<SendReceipt, ChatError> {
        let content = non_empty(content)?;
        let leaf = self.db.conversation(conversation_id)?.current_leaf_id;
        let message = self.db.add_user_message(conversation_id, leaf, content)?;
        let generation_id = self.reply_to(conversation_id, message.id, target)?;
        Ok(SendReceipt { message, generation_id })
    }

    /// A new reply to `user_message_id`, beside the ones it already has.
    pub fn regenerate(
        &self,
        conversation_id: ConversationId,
        user_message_id: MessageId,
        target: ReplyTarget,
    ) -> Result<GenerationId, ChatError> {
        self.reply_to(conversation_id, user_message_id, target)
    }

    /// Adds the edited text as a sibling of `message_id` (the original stays on its own
    /// branch) and queues a reply to it.
    pub fn edit_and_resend(
        &self,
        conversation_id: ConversationId,
        message_id: MessageId,
        content: &str,
        target: ReplyTarget,
    ) -> Result<SendReceipt, ChatError> {
        let content = non_empty(content)?;
        let original = self.db.message(conversation_id, message_id)?;
        if original.role != Role::User {
            return Err(ChatError::NotEditable);
        }
        let message = self.db.add_user_message(conversation_id, original.parent_id, content)?;
        let generation_id = self.reply_to(conversation_id, message.id, target)?;
        Ok(SendReceipt { message, generation_id })
    }

    /// Stops a generation; a running one keeps and saves what it generated.
    pub fn stop(&self, generation_id: GenerationId) -> bool {
        self.remote.as_ref().is_some_and(|remote| remote.stop(generation_id))
            || self.worker.cancel(generation_id)
    }

    fn reply_to(
        &self,
        conversation_id: ConversationId,
        user_message_id: MessageId,
        target: ReplyTarget,
    ) -> Result<GenerationId, ChatError> {
        if target.model_id.is_empty() {
            return Err(ChatError::NoModel);
        }
        let conversation = self.db.conversation(conversation_id)?;
        let branch = self.db.path_to(conversation_id, user_message_id)?;
        if branch.last().map(|message| message.role) != Some(Role::User) {
            return Err(ChatError::NotAUserMessage(user_message_id));
        }
        let messages = prompt::chat_messages(&conversation.settings.system_prompt, &branch);
        let options = prompt::generate_options(&conversation.settings, fresh_seed());
        let observer = Box::new(ReplyObserver::new(
            self.db.clone(),
            target.sink,
            conversation_id,
            user_message_id,
            target.model_id.clone(),
        ));
        if let (Some(remote), Some(model)) = (&self.remote, RemoteModelId::parse(&target.model_id)) {
            return Ok(remote.chat(&model, messages, options, observer)?);
        }
        let observer: Box<dyn GenerationObserver> = match &self.profiler {
            Some(profiler) => profiler.observe(target.model_id.clone(), observer),
            None => observer,
        };
        let request = GenerationRequest {
            model_id: target.model_id,
            owner: target.owner,
            key: EngineKey::Reply(ReplyKey { conversation_id }),
            prompt: Prompt::Chat(messages),
            options,
        };
        Ok(self.worker.generate(request, observer)?)
    }
}

fn non_empty(content: &str) -> Result<&str, ChatError> {
    if content.trim().is_empty() {
        Err(ChatError::EmptyMessage)
    } else {
        Ok(content)
    }
}

/// A seed for a conversation without one: different for every reply.
fn fresh_seed() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}
