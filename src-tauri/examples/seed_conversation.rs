//! Writes a conversation into the app's database, for end-to-end tests that need messages
//! the model would not write (markup injection). Uses the database the app opens (the
//! platform data directory, so `XDG_DATA_HOME` moves it).
//!
//!     seed_conversation TITLE USER_MESSAGE ASSISTANT_MESSAGE

use doppler_app::core::{
    app::AppPaths,
    storage::{ConversationSettings, Database, FinishReason, GenerationStats, NewReply},
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let [title, user, assistant]: [String; 3] = std::env::args()
        .skip(1)
        .collect::<Vec<_>>()
        .try_into()
        .map_err(|_| "usage: seed_conversation TITLE USER_MESSAGE ASSISTANT_MESSAGE")?;
    let paths = AppPaths::from_platform().ok_or("no data directory")?;
    let db = Database::open(&paths.database())?.database;
    let conversation = db.create_conversation(&ConversationSettings::default())?;
    db.rename_conversation(conversation.id, &title)?;
    let question = db.add_user_message(conversation.id, None, &user)?;
    let stats = GenerationStats {
        model_id: "smollm2-135m-instruct".into(),
        finish_reason: FinishReason::Eos,
        prompt_tokens: 0,
        generated_tokens: 0,
        tokens_per_second: 0.0,
        time_to_first_token_ms: 0.0,
    };
    db.add_reply(&NewReply {
        conversation_id: conversation.id,
        parent_id: question.id,
        content: assistant,
        stats,
    })?;
    println!("{}", paths.database().display());
    Ok(())
}
