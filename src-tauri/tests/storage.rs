//! The conversation database on real SQLite files: the message tree, search, settings,
//! durability across reopening, migrations and damaged files.

use std::fs;

use doppler_app::core::storage::{
    ConversationSettings, Database, FinishReason, GenerationStats, NewReply, OpenError, Role,
};

fn open(dir: &tempfile::TempDir) -> Database {
    let opened = Database::open(&dir.path().join("conversations.sqlite3")).expect("opens");
    assert!(opened.recovered.is_none());
    opened.database
}

fn stats(finish_reason: FinishReason) -> GenerationStats {
    GenerationStats {
        model_id: "smollm2-135m-instruct".into(),
        finish_reason,
        prompt_tokens: 20,
        generated_tokens: 5,
        tokens_per_second: 30.0,
        time_to_first_token_ms: 120.0,
    }
}

fn reply(db: &Database, conversation_id: i64, parent_id: i64, content: &str) -> i64 {
    db.add_reply(&NewReply {
        conversation_id,
        parent_id,
        content: content.into(),
        stats: stats(FinishReason::Eos),
    })
    .unwrap()
    .id
}

fn thread_contents(db: &Database, conversation_id: i64) -> Vec<String> {
    db.thread(conversation_id).unwrap().into_iter().map(|m| m.message.content).collect()
}

#[test]
fn a_conversation_keeps_its_messages_in_order_and_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let conversation = db.create_conversation(&ConversationSettings::default()).unwrap();
    assert_eq!(conversation.title, "New chat");
    assert!(db.thread(conversation.id).unwrap().is_empty());

    let question = db
        .add_user_message(
            conversation.id,
            None,
            "  \nWhy is the sky blue? Explain it like I am five years old, please.\nThanks",
        )
        .unwrap();
    let answer = db
        .add_reply(&NewReply {
            conversation_id: conversation.id,
            parent_id: question.id,
            content: "Because of Rayleigh scattering.".into(),
            stats: stats(FinishReason::Eos),
        })
        .unwrap();
    assert_eq!(answer.generation, Some(stats(FinishReason::Eos)));

    let conversation = db.conversation(conversation.id).unwrap();
    assert_eq!(conversation.title, "Why is the sky blue? Explain it like I am five years old, pl…");
    assert_eq!(conversation.current_leaf_id, Some(answer.id));
    assert_eq!(conversation.model_id.as_deref(), Some("smollm2-135m-instruct"));
    let thread = db.thread(conversation.id).unwrap();
    assert_eq!(thread.iter().map(|m| m.message.role).collect::<Vec<_>>(), [Role::User, Role::Assistant]);
    assert_eq!(thread[1].message.parent_id, Some(question.id));

    let renamed = db.rename_conversation(conversation.id, "Sky").unwrap();
    assert_eq!(renamed.title, "Sky");
    // A renamed conversation keeps its name when its first message is edited.
    db.add_user_message(conversation.id, None, "Another first message").unwrap();
    assert_eq!(db.conversation(conversation.id).unwrap().title, "Sky");
}

#[test]
fn regenerations_and_edits_are_branches_that_stay() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let c = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    let q1 = db.add_user_message(c, None, "q1").unwrap().id;
    let a1 = reply(&db, c, q1, "a1");
    let q2 = db.add_user_message(c, Some(a1), "q2").unwrap().id;
    let a2 = reply(&db, c, q2, "a2");
    // Regenerate the first answer: a sibling of a1, and the branch on screen ends there.
    let a1b = reply(&db, c, q1, "a1 again");
    assert_eq!(thread_contents(&db, c), ["q1", "a1 again"]);
    let thread = db.thread(c).unwrap();
    assert_eq!(thread[1].sibling_ids, [a1, a1b]);
    assert_eq!(thread[0].sibling_ids, [q1]);

    // Back to the first version: the branch below it comes back, down to its latest leaf.
    db.select_branch(c, a1).unwrap();
    assert_eq!(thread_contents(&db, c), ["q1", "a1", "q2", "a2"]);
    assert_eq!(db.conversation(c).unwrap().current_leaf_id, Some(a2));

    // Edit the second question: a new branch beside q2.
    let q2b = db.add_user_message(c, Some(a1), "q2 edited").unwrap().id;
    assert_eq!(thread_contents(&db, c), ["q1", "a1", "q2 edited"]);
    assert_eq!(db.thread(c).unwrap()[2].sibling_ids, [q2, q2b]);
    assert_eq!(
        db.path_to(c, a2).unwrap().iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
        ["q1", "a1", "q2", "a2"]
    );
}

#[test]
fn replies_follow_user_messages_of_their_own_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let c1 = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    let c2 = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    let q = db.add_user_message(c1, None, "q").unwrap().id;
    let a = reply(&db, c1, q, "a");
    let reply_to_reply = db.add_reply(&NewReply {
        conversation_id: c1,
        parent_id: a,
        content: "x".into(),
        stats: stats(FinishReason::Eos),
    });
    assert!(reply_to_reply.is_err());
    let across = db.add_reply(&NewReply {
        conversation_id: c2,
        parent_id: q,
        content: "x".into(),
        stats: stats(FinishReason::Eos),
    });
    assert!(across.is_err());
    assert!(db.add_user_message(c2, Some(q), "x").is_err());
    assert!(db.select_branch(c2, q).is_err());
    assert_eq!(thread_contents(&db, c1), ["q", "a"]);
}

#[test]
fn a_stopped_reply_is_kept_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.sqlite3");
    let c;
    {
        let db = Database::open(&path).unwrap().database;
        c = db.create_conversation(&ConversationSettings::default()).unwrap().id;
        let q = db.add_user_message(c, None, "Tell me a long story").unwrap().id;
        db.add_reply(&NewReply {
            conversation_id: c,
            parent_id: q,
            content: "Once upon a".into(),
            stats: stats(FinishReason::Cancelled),
        })
        .unwrap();
    }
    let db = Database::open(&path).unwrap().database;
    let thread = db.thread(c).unwrap();
    assert_eq!(thread[1].message.content, "Once upon a");
    assert_eq!(thread[1].message.generation.as_ref().unwrap().finish_reason, FinishReason::Cancelled);
}

#[test]
fn a_reply_streams_into_the_database_and_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.sqlite3");
    let (c, q);
    {
        let db = Database::open(&path).unwrap().database;
        c = db.create_conversation(&ConversationSettings::default()).unwrap().id;
        q = db.add_user_message(c, None, "Tell me a long story").unwrap().id;
        let reply = db.begin_reply(c, q, "smollm2-135m-instruct").unwrap();
        assert_eq!(
            (reply.role, reply.content.as_str(), reply.generation.is_none()),
            (Role::Assistant, "", true)
        );
        // Shown at once: the branch ends at the reply while it streams.
        assert_eq!(db.thread(c).unwrap().last().unwrap().message.id, reply.id);
        db.save_reply_text(c, reply.id, "Once upon").unwrap();
        db.save_reply_text(c, reply.id, "Once upon a time").unwrap();
        // The app is killed here: no finish_reply.
    }
    let db = Database::open(&path).unwrap().database;
    assert_eq!(db.mark_interrupted_replies().unwrap(), 1);
    let thread = db.thread(c).unwrap();
    assert_eq!(thread[1].message.content, "Once upon a time");
    assert_eq!(thread[1].message.generation.as_ref().unwrap().finish_reason, FinishReason::Interrupted);
    // A finished reply is no longer streaming: no more saves, and nothing left to mark.
    assert!(db.save_reply_text(c, thread[1].message.id, "more").is_err());
    assert_eq!(db.mark_interrupted_replies().unwrap(), 0);

    // A second reply runs to its end; a third never produces text and is discarded.
    let second = db.begin_reply(c, q, "smollm2-135m-instruct").unwrap();
    db.save_reply_text(c, second.id, "Long ago").unwrap();
    let done = db.finish_reply(c, second.id, "Long ago, far away.", &stats(FinishReason::Eos)).unwrap();
    assert_eq!(done.content, "Long ago, far away.");
    assert_eq!(done.generation.unwrap().generated_tokens, 5);
    let third = db.begin_reply(c, q, "smollm2-135m-instruct").unwrap();
    db.discard_reply(c, third.id).unwrap();
    assert_eq!(db.thread(c).unwrap().last().unwrap().message.id, q);
    assert!(db.message(c, third.id).is_err());
    // Replies answer user messages only.
    assert!(db.begin_reply(c, second.id, "smollm2-135m-instruct").is_err());
}

#[test]
fn search_finds_titles_and_message_text_with_a_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let rust = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    let q = db.add_user_message(rust, None, "Rust lifetimes").unwrap().id;
    reply(
        &db,
        rust,
        q,
        &format!("{} The borrow checker tracks how long 100% of references live.", "Intro. ".repeat(20)),
    );
    let soup = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    db.add_user_message(soup, None, "A soup recipe").unwrap();

    let all = db.list_conversations(None).unwrap();
    assert_eq!(all.iter().map(|c| c.id).collect::<Vec<_>>(), [soup, rust], "most recent first");

    let by_title = db.list_conversations(Some("SOUP")).unwrap();
    assert_eq!(by_title.iter().map(|c| c.id).collect::<Vec<_>>(), [soup]);
    assert_eq!(by_title[0].snippet.as_deref(), Some("A soup recipe"));

    let by_text = db.list_conversations(Some("borrow checker")).unwrap();
    assert_eq!(by_text.len(), 1);
    let snippet = by_text[0].snippet.as_deref().unwrap();
    assert!(snippet.contains("The borrow checker"), "{snippet}");
    assert!(
        !snippet.starts_with("Intro. Intro. Intro. Intro. Intro. Intro. Intro."),
        "the snippet starts near the match: {snippet}"
    );

    // Wildcards are text, not patterns.
    assert_eq!(db.list_conversations(Some("100%")).unwrap().len(), 1);
    assert!(db.list_conversations(Some("_%_")).unwrap().is_empty());
    assert_eq!(db.list_conversations(Some("   ")).unwrap().len(), 2);
}

#[test]
fn deleting_a_conversation_deletes_its_messages() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let c = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    let q = db.add_user_message(c, None, "findme").unwrap().id;
    reply(&db, c, q, "findme too");
    db.delete_conversation(c).unwrap();
    assert!(db.conversation(c).is_err());
    assert!(db.message(c, q).is_err());
    assert!(db.list_conversations(Some("findme")).unwrap().is_empty());
    assert!(db.delete_conversation(c).is_err());
}

#[test]
fn settings_are_stored_per_conversation_and_app_wide() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let custom = ConversationSettings {
        system_prompt: "Be brief.".into(),
        temperature: 0.0,
        seed: Some(42),
        max_tokens: 64,
        ..ConversationSettings::default()
    };
    let c = db.create_conversation(&ConversationSettings::default()).unwrap().id;
    assert_eq!(db.update_conversation_settings(c, &custom).unwrap().settings, custom);
    assert_eq!(db.conversation(c).unwrap().settings, custom);

    assert_eq!(db.setting::<Vec<String>>("recent").unwrap(), None);
    db.set_setting("recent", &vec!["a".to_string()]).unwrap();
    db.set_setting("recent", &vec!["b".to_string()]).unwrap();
    assert_eq!(db.setting::<Vec<String>>("recent").unwrap(), Some(vec!["b".to_string()]));
}

#[test]
fn the_database_uses_wal_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/conversations.sqlite3");
    let first = Database::open(&path).unwrap().database;
    let id = first.create_conversation(&ConversationSettings::default()).unwrap().id;
    // While a connection is open, writes go to the write-ahead log.
    assert!(dir.path().join("nested/dir/conversations.sqlite3-wal").exists(), "journal_mode=WAL");
    drop(first);
    let db = Database::open(&path).unwrap();
    assert!(db.recovered.is_none());
    assert_eq!(db.database.conversation(id).unwrap().id, id);
}

#[test]
fn a_file_that_is_not_a_database_is_moved_aside_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.sqlite3");
    let garbage = b"this is not an SQLite database, but the user's data all the same".repeat(100);
    fs::write(&path, &garbage).unwrap();

    let opened = Database::open(&path).unwrap();
    let recovered = opened.recovered.expect("the damaged file is reported");
    assert!(recovered
        .moved_to
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("conversations.sqlite3.corrupt-"));
    assert_eq!(fs::read(&recovered.moved_to).unwrap(), garbage, "the damaged file is kept byte for byte");
    assert!(!recovered.reason.is_empty());
    let c = opened.database.create_conversation(&ConversationSettings::default()).unwrap();
    assert_eq!(opened.database.conversation(c.id).unwrap().title, "New chat");
}

#[test]
fn a_database_with_damaged_pages_is_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.sqlite3");
    {
        let db = Database::open(&path).unwrap().database;
        for i in 0..200 {
            let c = db.create_conversation(&ConversationSettings::default()).unwrap().id;
            db.add_user_message(c, None, &format!("message {i} {}", "text ".repeat(40))).unwrap();
        }
    }
    // Checkpoint the WAL into the main file, then scribble over pages past the header.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    }
    let mut bytes = fs::read(&path).unwrap();
    assert!(bytes.len() > 16 * 4096, "the database spans many pages");
    let end = bytes.len() - 4096;
    for byte in &mut bytes[8192..end] {
        *byte = 0xA5;
    }
    fs::write(&path, &bytes).unwrap();

    let opened = Database::open(&path).unwrap();
    let recovered = opened.recovered.expect("damage is found by the integrity check");
    assert_eq!(fs::read(&recovered.moved_to).unwrap(), bytes);
    assert!(opened.database.list_conversations(None).unwrap().is_empty());
}

#[test]
fn a_database_from_a_newer_version_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.sqlite3");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 999;").unwrap();
    }
    let before = fs::read(&path).unwrap();
    match Database::open(&path) {
        Err(OpenError::NewerSchema { found: 999, .. }) => {}
        Err(other) => panic!("expected NewerSchema, got {other}"),
        Ok(_) => panic!("a newer schema must not be opened"),
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(
        fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains("corrupt"))
            .count(),
        0
    );
}
