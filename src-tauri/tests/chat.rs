//! The chat service and the engine worker without a window: real SQLite, the real engine
//! (lavapipe where there is no GPU) and SmolLM2 135M from `DOPPLER_TEST_MODELS_DIR`.

// How every test finds the default models (the rest of tests/support is GPU helpers); this
// binary uses a part of the file.
#[allow(dead_code)]
#[path = "../../tests/support/models.rs"]
mod test_models;

use std::{
    path::PathBuf,
    sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock},
    time::{Duration, Instant},
};

use doppler_app::core::{
    chat::{ChatService, GenerationEvent, GenerationSink, ReplyTarget},
    engine::{
        EngineKey, EngineWorker, GenerationFailure, GenerationObserver, GenerationOutcome, GenerationRequest,
        LoadFailure, LoadObserver, LoadRequest, ModelState, Prompt, ReplyKey, MAX_WAITING_REPLIES,
    },
    storage::{ConversationSettings, Database, FinishReason, Role},
};
use doppler_engine::{EngineOptions, GenerateOptions, ModelInfo};
use test_models::{model_path, SMOLLM2};

const MODEL: &str = "smollm2";
const WAIT: Duration = Duration::from_secs(180);

/// Collects a generation's events and lets the test wait for them.
#[derive(Default)]
struct Collector {
    events: Mutex<Vec<GenerationEvent>>,
    changed: Condvar,
}

impl GenerationSink for Collector {
    fn send(&self, event: GenerationEvent) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_all();
    }
}

impl Collector {
    fn wait_until(&self, what: &str, done: impl Fn(&[GenerationEvent]) -> bool) -> Vec<GenerationEvent> {
        let events = self.events.lock().unwrap();
        let (events, timeout) =
            self.changed.wait_timeout_while(events, WAIT, |events| !done(events)).unwrap();
        assert!(!timeout.timed_out(), "timed out waiting for {what}; events so far: {:?}", *events);
        events.clone()
    }

    fn wait_for_end(&self) -> GenerationEvent {
        let events = self.wait_until("the generation to end", |events| events.last().is_some_and(is_end));
        events.last().unwrap().clone()
    }

    fn wait_for_tokens(&self, count: usize) {
        self.wait_until("tokens", |events| {
            events.iter().filter(|e| matches!(e, GenerationEvent::Token { .. })).count() >= count
                || events.last().is_some_and(is_end)
        });
    }

    fn streamed_text(&self) -> String {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                GenerationEvent::Token { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn events(&self) -> Vec<GenerationEvent> {
        self.events.lock().unwrap().clone()
    }
}

fn is_end(event: &GenerationEvent) -> bool {
    matches!(
        event,
        GenerationEvent::Done { .. } | GenerationEvent::Cancelled | GenerationEvent::Failed { .. }
    )
}

struct LoadResult(mpsc::Sender<Result<ModelInfo, LoadFailure>>);

impl LoadObserver for LoadResult {
    fn progress(&mut self, fraction: f32, _stage: &str) {
        assert!((0.0..=1.0).contains(&fraction));
    }

    fn finished(self: Box<Self>, result: Result<ModelInfo, LoadFailure>) {
        self.0.send(result).unwrap();
    }
}

fn load(
    worker: &EngineWorker,
    model_id: &str,
    path: PathBuf,
    context_len: Option<u32>,
) -> Result<ModelInfo, LoadFailure> {
    let (sender, result) = mpsc::channel();
    worker.load(LoadRequest { model_id: model_id.into(), path, context_len }, Box::new(LoadResult(sender)));
    result.recv_timeout(WAIT).expect("the load finishes")
}

struct Harness {
    _dir: tempfile::TempDir,
    db: Arc<Database>,
    worker: Arc<EngineWorker>,
    chat: ChatService,
}

impl Harness {
    fn new(path: PathBuf) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::open(&dir.path().join("conversations.sqlite3")).unwrap().database);
        let worker = Arc::new(EngineWorker::spawn(EngineOptions::default(), MAX_WAITING_REPLIES));
        let info = load(&worker, MODEL, path, Some(512)).expect("SmolLM2 loads");
        assert_eq!(info.architecture, "llama");
        assert_eq!(info.context_len, 512);
        Harness { _dir: dir, chat: ChatService::new(db.clone(), worker.clone()), db, worker }
    }

    fn conversation(&self, max_tokens: u32) -> i64 {
        let settings = ConversationSettings {
            temperature: 0.0,
            seed: Some(7),
            max_tokens,
            ..ConversationSettings::default()
        };
        self.db.create_conversation(&settings).unwrap().id
    }

    fn target(&self, sink: &Arc<Collector>) -> ReplyTarget {
        ReplyTarget { model_id: MODEL.into(), owner: "main".into(), sink: sink.clone() }
    }
}

/// One worker with the model loaded, shared by the tests one at a time (the queue is shared).
fn harness() -> Option<MutexGuard<'static, Harness>> {
    static HARNESS: OnceLock<Mutex<Harness>> = OnceLock::new();
    let path = model_path(SMOLLM2)?;
    Some(
        HARNESS
            .get_or_init(|| Mutex::new(Harness::new(path)))
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    )
}

fn done_message(event: GenerationEvent) -> doppler_app::core::storage::Message {
    match event {
        GenerationEvent::Done { message } => message,
        other => panic!("expected a saved reply, got {other:?}"),
    }
}

#[test]
fn a_reply_streams_in_and_is_saved_with_its_numbers() {
    let Some(h) = harness() else { return };
    let c = h.conversation(12);
    let sink = Arc::new(Collector::default());
    let receipt = h.chat.send(c, "What is the capital of France?", h.target(&sink)).unwrap();
    assert_eq!(receipt.message.role, Role::User);
    let reply = done_message(sink.wait_for_end());

    let events = sink.events();
    assert_eq!(events.first(), Some(&GenerationEvent::Started), "{events:?}");
    assert!(
        events.iter().filter(|e| matches!(e, GenerationEvent::Token { .. })).count() >= 2,
        "tokens stream one by one: {events:?}"
    );
    assert_eq!(sink.streamed_text(), reply.content, "the saved reply is what streamed");
    let stats = reply.generation.clone().unwrap();
    assert!(matches!(stats.finish_reason, FinishReason::Eos | FinishReason::MaxTokens));
    assert!(stats.generated_tokens >= 1 && stats.generated_tokens <= 12, "{stats:?}");
    assert!(stats.prompt_tokens > 5, "{stats:?}");
    assert!(stats.tokens_per_second >= 0.0 && stats.time_to_first_token_ms > 0.0);
    assert_eq!(stats.model_id, MODEL);

    let thread = h.db.thread(c).unwrap();
    assert_eq!(thread.iter().map(|m| m.message.id).collect::<Vec<_>>(), [receipt.message.id, reply.id]);

    // Greedy decoding: a regenerated reply is the same text, on a branch of its own.
    let sink2 = Arc::new(Collector::default());
    h.chat.regenerate(c, receipt.message.id, h.target(&sink2)).unwrap();
    let again = done_message(sink2.wait_for_end());
    assert_eq!(again.content, reply.content);
    assert_eq!(h.db.thread(c).unwrap()[1].sibling_ids, [reply.id, again.id]);
}

#[test]
fn stopping_keeps_what_was_generated() {
    let Some(h) = harness() else { return };
    let c = h.conversation(400);
    let sink = Arc::new(Collector::default());
    let receipt = h
        .chat
        .send(
            c,
            "Write a very long story about a dragon who learns to paint. Use many chapters.",
            h.target(&sink),
        )
        .unwrap();
    sink.wait_for_tokens(4);
    // While it streams the reply is already in the database, its text saved every second or
    // 32 tokens, so a crash now would keep it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let saved = loop {
        let last = h.db.thread(c).unwrap().pop().unwrap().message;
        if last.role == Role::Assistant && !last.content.is_empty() {
            break last;
        }
        assert!(Instant::now() < deadline, "no text of the streaming reply was saved");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(saved.generation.is_none(), "not finished yet: {saved:?}");
    assert!(sink.streamed_text().starts_with(&saved.content), "{saved:?}");
    assert!(h.chat.stop(receipt.generation_id), "the running generation stops");
    let reply = done_message(sink.wait_for_end());
    assert_eq!(reply.id, saved.id, "the saved reply is finished in place");
    let stats = reply.generation.clone().unwrap();
    assert_eq!(stats.finish_reason, FinishReason::Cancelled);
    assert!(stats.generated_tokens >= 4 && stats.generated_tokens < 400, "{stats:?}");
    assert!(!reply.content.is_empty());
    assert_eq!(reply.content, sink.streamed_text());
    assert_eq!(h.db.thread(c).unwrap()[1].message.content, reply.content);
    assert!(!h.chat.stop(receipt.generation_id), "a finished generation is not running");
}

#[test]
fn a_second_request_waits_in_a_visible_queue() {
    let Some(h) = harness() else { return };
    let (a, b, c) = (h.conversation(300), h.conversation(6), h.conversation(6));
    let (sink_a, sink_b, sink_c) =
        (Arc::new(Collector::default()), Arc::new(Collector::default()), Arc::new(Collector::default()));
    let first = h
        .chat
        .send(a, "Count slowly from one to two hundred, one number per line.", h.target(&sink_a))
        .unwrap();
    sink_a.wait_for_tokens(1);
    let second = h.chat.send(b, "Say yes.", h.target(&sink_b)).unwrap();
    let third = h.chat.send(c, "Say no.", h.target(&sink_c)).unwrap();
    assert_eq!(sink_b.events(), [GenerationEvent::Queued { ahead: 1 }]);
    assert_eq!(sink_c.events(), [GenerationEvent::Queued { ahead: 2 }]);
    let queue = h.worker.queue();
    assert_eq!(queue.running.map(|r| r.generation_id), Some(first.generation_id));
    assert_eq!(
        queue.waiting.iter().map(|w| (w.generation_id, w.key.clone())).collect::<Vec<_>>(),
        [
            (second.generation_id, EngineKey::Reply(ReplyKey { conversation_id: b })),
            (third.generation_id, EngineKey::Reply(ReplyKey { conversation_id: c }))
        ]
    );
    assert_eq!(
        serde_json::to_value(&queue.waiting[0]).unwrap(),
        serde_json::json!({ "generationId": second.generation_id, "conversationId": b }),
        "the UI reads the queue in this shape"
    );

    // Leaving the queue: nothing is generated or saved, and the one behind moves up.
    assert!(h.chat.stop(second.generation_id));
    assert_eq!(sink_b.wait_for_end(), GenerationEvent::Cancelled);
    assert_eq!(sink_c.events().last(), Some(&GenerationEvent::Queued { ahead: 1 }));
    assert_eq!(h.db.thread(b).unwrap().len(), 1, "only the question");

    h.chat.stop(first.generation_id);
    assert_eq!(
        done_message(sink_a.wait_for_end()).generation.unwrap().finish_reason,
        FinishReason::Cancelled
    );
    let reply = done_message(sink_c.wait_for_end());
    assert!(sink_c.events().contains(&GenerationEvent::Started));
    assert_eq!(h.db.thread(c).unwrap().last().unwrap().message.id, reply.id);
    assert!(h.worker.queue().running.is_none() && h.worker.queue().waiting.is_empty());
}

#[test]
fn closing_the_window_cancels_its_generations() {
    let Some(h) = harness() else { return };
    let (a, b) = (h.conversation(300), h.conversation(300));
    let (sink_a, sink_b) = (Arc::new(Collector::default()), Arc::new(Collector::default()));
    h.chat.send(a, "Tell me everything about the ocean.", h.target(&sink_a)).unwrap();
    sink_a.wait_for_tokens(2);
    h.chat.send(b, "Tell me everything about the sky.", h.target(&sink_b)).unwrap();
    h.worker.cancel_owned_by("main");
    assert_eq!(sink_b.wait_for_end(), GenerationEvent::Cancelled);
    assert_eq!(
        done_message(sink_a.wait_for_end()).generation.unwrap().finish_reason,
        FinishReason::Cancelled
    );
}

#[test]
fn edits_are_sent_on_a_branch_of_their_own() {
    let Some(h) = harness() else { return };
    let c = h.conversation(4);
    let sink = Arc::new(Collector::default());
    let original = h.chat.send(c, "Hi", h.target(&sink)).unwrap();
    done_message(sink.wait_for_end());
    let sink2 = Arc::new(Collector::default());
    let edited = h.chat.edit_and_resend(c, original.message.id, "Hello there", h.target(&sink2)).unwrap();
    let reply = done_message(sink2.wait_for_end());
    let thread = h.db.thread(c).unwrap();
    assert_eq!(thread.iter().map(|m| m.message.id).collect::<Vec<_>>(), [edited.message.id, reply.id]);
    assert_eq!(thread[0].sibling_ids, [original.message.id, edited.message.id]);
    assert!(
        h.chat.edit_and_resend(c, reply.id, "not mine", h.target(&sink2)).is_err(),
        "replies are not edited"
    );
    assert!(h.chat.send(c, "   ", h.target(&sink2)).is_err(), "empty messages are refused");
}

#[test]
fn a_full_context_is_reported() {
    let Some(h) = harness() else { return };
    let path = model_path(SMOLLM2).unwrap();
    load(&h.worker, "smollm2-tiny-context", path, Some(48)).unwrap();
    let target = |sink: &Arc<Collector>| ReplyTarget {
        model_id: "smollm2-tiny-context".into(),
        owner: "main".into(),
        sink: sink.clone(),
    };

    let long = h.conversation(16);
    let sink = Arc::new(Collector::default());
    h.chat
        .send(long, &"Please summarize this sentence about rivers and mountains. ".repeat(10), target(&sink))
        .unwrap();
    match sink.wait_for_end() {
        GenerationEvent::Failed { context_full, reason } => assert!(context_full, "{reason}"),
        other => panic!("expected a context-full failure, got {other:?}"),
    }

    let filling = h.conversation(200);
    let sink = Arc::new(Collector::default());
    h.chat.send(filling, "Count from one to one hundred.", target(&sink)).unwrap();
    let reply = done_message(sink.wait_for_end());
    let stats = reply.generation.unwrap();
    assert!(matches!(stats.finish_reason, FinishReason::ContextFull | FinishReason::Eos), "{stats:?}");
    if stats.finish_reason == FinishReason::ContextFull {
        assert!(stats.prompt_tokens + stats.generated_tokens <= 48, "{stats:?}");
    }
    let (done, unloaded) = mpsc::channel();
    h.worker.unload("smollm2-tiny-context".into(), Box::new(move || done.send(()).unwrap()));
    unloaded.recv_timeout(WAIT).unwrap();
    assert!(!h.worker.model_states().contains_key("smollm2-tiny-context"));
}

#[test]
fn loading_reports_failures_with_their_reason() {
    let Some(h) = harness() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.gguf");
    std::fs::write(&bogus, b"GGUF but not really a model").unwrap();
    let failure = load(&h.worker, "bogus", bogus, None).expect_err("not a model");
    assert!(matches!(failure, LoadFailure::Model(ref reason) if !reason.is_empty()), "{failure}");
    assert!(
        matches!(h.worker.model_states().get("bogus"), Some(ModelState::Failed { reason }) if !reason.is_empty())
    );
    assert!(matches!(h.worker.model_states().get(MODEL), Some(ModelState::Loaded { .. })));

    let sink = Arc::new(Collector::default());
    let c = h.conversation(4);
    h.chat
        .send(c, "Hi", ReplyTarget { model_id: "bogus".into(), owner: "main".into(), sink: sink.clone() })
        .unwrap();
    match sink.wait_for_end() {
        GenerationEvent::Failed { reason, context_full } => {
            assert!(reason.contains("not loaded") && !context_full, "{reason}")
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Records the outcome of a generation queued straight on the worker.
struct Outcome(mpsc::Sender<String>, Arc<Collector>);

impl GenerationObserver for Outcome {
    fn queued(&mut self, _ahead: usize) {}
    fn started(&mut self) {}
    fn token(&mut self, text: &str) {
        self.1.send(GenerationEvent::Token { text: text.into() });
    }
    fn finished(self: Box<Self>, outcome: GenerationOutcome) {
        let text = match outcome {
            GenerationOutcome::Finished(summary) => {
                format!("finished {:?}: {}", summary.stop_reason, summary.text)
            }
            GenerationOutcome::CancelledWhileQueued => "cancelled while queued".into(),
            GenerationOutcome::Failed(GenerationFailure::ModelNotLoaded(model)) => {
                format!("not loaded: {model}")
            }
            GenerationOutcome::Failed(other) => format!("failed: {other}"),
        };
        self.0.send(text).unwrap();
    }
}

#[test]
fn shutting_down_stops_the_running_generation_and_refuses_new_ones() {
    let Some(path) = model_path(SMOLLM2) else { return };
    let worker = EngineWorker::spawn(EngineOptions::default(), MAX_WAITING_REPLIES);
    load(&worker, MODEL, path, Some(256)).unwrap();
    let request = |text: &str| GenerationRequest {
        model_id: MODEL.into(),
        owner: "main".into(),
        key: EngineKey::Reply(ReplyKey { conversation_id: 1 }),
        prompt: Prompt::Chat(vec![doppler_engine::ChatMessage::user(text)]),
        options: GenerateOptions { max_tokens: 200, ..GenerateOptions::default() },
    };
    let (running_sender, running) = mpsc::channel();
    let tokens = Arc::new(Collector::default());
    worker
        .generate(request("Tell me a long story."), Box::new(Outcome(running_sender, tokens.clone())))
        .unwrap();
    let (queued_sender, queued) = mpsc::channel();
    worker
        .generate(request("And another."), Box::new(Outcome(queued_sender, Arc::new(Collector::default()))))
        .unwrap();
    tokens.wait_for_tokens(2);

    worker.shutdown(Duration::from_secs(30));
    assert_eq!(queued.recv_timeout(WAIT).unwrap(), "cancelled while queued");
    let finished = running.recv_timeout(WAIT).unwrap();
    assert!(finished.starts_with("finished Cancelled"), "{finished}");

    let (late_sender, late) = mpsc::channel();
    worker
        .generate(request("Too late."), Box::new(Outcome(late_sender, Arc::new(Collector::default()))))
        .unwrap();
    assert_eq!(late.recv_timeout(WAIT).unwrap(), "cancelled while queued");
}
