//! Remote backends over real sockets on 127.0.0.1: `doppler_server` in-process with the tiny
//! random-weight Llama 3 of tests/data/hf/llama3, and an axum stand-in that speaks OpenAI's
//! streaming protocol with the faults real servers have (a bad key, a 500, a dropped stream,
//! a reply that never ends, nobody listening). The chat goes through `ChatService`, as the
//! window's commands do.

use std::{convert::Infallible, path::PathBuf, sync::Arc, time::Duration};

use axum::{
    body::Body,
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use doppler_engine::EngineOptions;
use doppler_runtime::LoadRequest;
use futures_util::{stream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{MemoryKeyStore, NewRemoteBackend, RemoteBackends, SharedKeyStore};
use crate::core::{
    chat::{ChatService, GenerationEvent, GenerationSink, ReplyTarget},
    engine::{EngineWorker, MAX_WAITING_REPLIES},
    storage::{ConversationSettings, Database, FinishReason, Role},
};

const KEY: &str = "sk-stand-in";
const WAIT: Duration = Duration::from_secs(120);

struct Harness {
    _dir: tempfile::TempDir,
    db: Arc<Database>,
    backends: Arc<RemoteBackends>,
    chat: ChatService,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::open(&dir.path().join("db.sqlite3")).unwrap().database);
        let keys: SharedKeyStore = Arc::new(MemoryKeyStore::default());
        let backends = Arc::new(RemoteBackends::new(db.clone(), keys, tokio::runtime::Handle::current()));
        // The worker never loads anything here: remote replies do not touch it.
        let worker = Arc::new(EngineWorker::spawn(EngineOptions::default(), MAX_WAITING_REPLIES));
        let chat = ChatService::new(db.clone(), worker).with_remote_backends(backends.clone());
        Harness { _dir: dir, db, backends, chat }
    }

    async fn add(&self, base_url: &str, api_key: Option<&str>) -> String {
        let backend = NewRemoteBackend {
            name: "Stand-in".into(),
            base_url: base_url.into(),
            api_key: api_key.map(String::from),
        };
        self.backends.add(backend).await.expect("the backend is added").id
    }

    fn conversation(&self, max_tokens: u32) -> i64 {
        let settings =
            ConversationSettings { temperature: 0.0, seed: Some(7), max_tokens, ..Default::default() };
        self.db.create_conversation(&settings).unwrap().id
    }

    /// Sends "Hi" to `model_id` in a new conversation; the reply's events come on the receiver.
    fn send(&self, model_id: &str) -> (i64, u64, mpsc::UnboundedReceiver<GenerationEvent>) {
        let conversation_id = self.conversation(8);
        let (sender, events) = mpsc::unbounded_channel();
        let target =
            ReplyTarget { model_id: model_id.into(), owner: "main".into(), sink: Arc::new(Sink(sender)) };
        let receipt = self.chat.send(conversation_id, "Hi", target).expect("the message is sent");
        (conversation_id, receipt.generation_id, events)
    }
}

struct Sink(mpsc::UnboundedSender<GenerationEvent>);

impl GenerationSink for Sink {
    fn send(&self, event: GenerationEvent) {
        let _ = self.0.send(event);
    }
}

/// Every event up to and including the end (`done`, `cancelled` or `failed`).
async fn until_end(events: &mut mpsc::UnboundedReceiver<GenerationEvent>) -> Vec<GenerationEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, events.recv()).await.expect("the reply ends in time");
        let event = event.expect("the sink stays open until the end");
        let end = matches!(
            event,
            GenerationEvent::Done { .. } | GenerationEvent::Cancelled | GenerationEvent::Failed { .. }
        );
        seen.push(event);
        if end {
            return seen;
        }
    }
}

fn streamed(events: &[GenerationEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            GenerationEvent::Token { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn failure(events: &[GenerationEvent]) -> String {
    match events.last() {
        Some(GenerationEvent::Failed { reason, .. }) => reason.clone(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

async fn listen(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

fn chunk(content: &str, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "stand-in",
        "choices": [{ "index": 0, "delta": { "content": content }, "finish_reason": finish }],
    });
    format!("data: {body}\n\n")
}

fn sse(frames: impl futures_util::Stream<Item = String> + Send + 'static) -> Response {
    let body = Body::from_stream(frames.map(Ok::<_, Infallible>));
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

fn openai_error(status: StatusCode, message: &str) -> Response {
    let body = json!({ "error": { "message": message, "type": "invalid_request_error", "param": null, "code": null } });
    (status, Json(body)).into_response()
}

/// One stand-in server; each path prefix behaves differently.
fn stand_in() -> Router {
    let models = || {
        get(|| async { Json(json!({ "object": "list", "data": [{ "id": "stand-in", "object": "model" }] })) })
    };
    Router::new()
        .route("/ok/v1/models", models())
        .route(
            "/ok/v1/chat/completions",
            post(|headers: HeaderMap, Json(request): Json<Value>| async move {
                let authorized = headers
                    .get(header::AUTHORIZATION)
                    .is_some_and(|value| value.to_str().ok() == Some(&format!("Bearer {KEY}")));
                if !authorized {
                    return openai_error(StatusCode::UNAUTHORIZED, "Incorrect API key provided");
                }
                assert_eq!(request["stream"], true);
                assert_eq!(request["messages"].as_array().unwrap().last().unwrap()["content"], "Hi");
                let usage = json!({ "choices": [], "usage": { "prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8 } });
                sse(stream::iter([
                    chunk("Hello", None),
                    chunk(", wor", None),
                    chunk("ld", Some("stop")),
                    format!("data: {usage}\n\n"),
                    "data: [DONE]\n\n".to_string(),
                ]))
            }),
        )
        .route("/broken/v1/models", get(|| async { openai_error(StatusCode::INTERNAL_SERVER_ERROR, "the GPU caught fire") }))
        .route(
            "/broken/v1/chat/completions",
            post(|| async { openai_error(StatusCode::INTERNAL_SERVER_ERROR, "the GPU caught fire") }),
        )
        .route(
            "/dropped/v1/chat/completions",
            post(|| async { sse(stream::iter([chunk("Half a rep", None)])) }),
        )
        .route(
            "/endless/v1/chat/completions",
            post(|| async {
                sse(stream::unfold(0, |n| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Some((chunk("la ", None), n + 1))
                }))
            }),
        )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_reply_streams_into_the_chat_and_is_stored() {
    let harness = Harness::new();
    let base = listen(stand_in()).await;
    let backend_id = harness.add(&format!("{base}/ok/v1/"), Some(KEY)).await;

    let lists = harness.backends.models().await.unwrap();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].error, None);
    let model_id = format!("{backend_id}/stand-in");
    assert_eq!(lists[0].model_ids, vec![model_id.clone()]);
    assert!(lists[0].backend.has_api_key);
    assert_eq!(lists[0].backend.base_url, format!("{base}/ok/v1"));
    // The key is in the keychain, not in the database.
    let stored: Value = harness.db.setting("remote_backends").unwrap().unwrap();
    assert!(!stored.to_string().contains(KEY), "{stored}");

    let (conversation_id, _, mut events) = harness.send(&model_id);
    let events = until_end(&mut events).await;
    assert!(matches!(events.first(), Some(GenerationEvent::Started)), "{events:?}");
    assert_eq!(streamed(&events), "Hello, world");
    let Some(GenerationEvent::Done { message }) = events.last() else { panic!("{events:?}") };
    assert_eq!(message.content, "Hello, world");
    let stats = message.generation.as_ref().unwrap();
    assert_eq!(stats.model_id, model_id);
    assert_eq!(stats.finish_reason, FinishReason::Eos);
    assert_eq!((stats.prompt_tokens, stats.generated_tokens), (5, 3));

    let thread = harness.db.thread(conversation_id).unwrap();
    let roles: Vec<Role> = thread.iter().map(|m| m.message.role).collect();
    assert_eq!(roles, vec![Role::User, Role::Assistant]);
    assert_eq!(thread[1].message.content, "Hello, world");

    harness.backends.remove(&backend_id).await.unwrap();
    assert!(harness.backends.list().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn failing_servers_say_what_went_wrong() {
    let harness = Harness::new();
    let base = listen(stand_in()).await;

    let wrong_key = harness.add(&format!("{base}/ok/v1"), Some("sk-wrong")).await;
    let (conversation_id, _, mut events) = harness.send(&format!("{wrong_key}/stand-in"));
    let reason = failure(&until_end(&mut events).await);
    assert!(reason.contains("refused the API key") && reason.contains("Incorrect API key"), "{reason}");
    // Nothing was generated: no reply is left behind.
    assert_eq!(harness.db.thread(conversation_id).unwrap().len(), 1);

    let broken = harness.add(&format!("{base}/broken/v1"), None).await;
    let (_, _, mut events) = harness.send(&format!("{broken}/model"));
    let reason = failure(&until_end(&mut events).await);
    assert!(reason.contains("HTTP 500") && reason.contains("the GPU caught fire"), "{reason}");
    let lists = harness.backends.models().await.unwrap();
    let listed = lists.iter().find(|list| list.backend.id == broken).unwrap();
    assert!(listed.error.as_deref().unwrap().contains("the GPU caught fire"), "{listed:?}");

    let dropped = harness.add(&format!("{base}/dropped/v1"), None).await;
    let (conversation_id, _, mut events) = harness.send(&format!("{dropped}/model"));
    let events = until_end(&mut events).await;
    let reason = failure(&events);
    assert!(reason.contains("closed before the reply was finished"), "{reason}");
    // What came before the drop is kept, marked failed.
    let thread = harness.db.thread(conversation_id).unwrap();
    assert_eq!(thread[1].message.content, "Half a rep");
    assert_eq!(thread[1].message.generation.as_ref().unwrap().finish_reason, FinishReason::Failed);

    // Nobody listens on a port that was just freed.
    let vacant = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let gone = harness.add(&format!("http://{vacant}/v1"), None).await;
    let (_, _, mut events) = harness.send(&format!("{gone}/model"));
    let reason = failure(&until_end(&mut events).await);
    assert!(
        reason.starts_with(&format!("cannot reach Stand-in at http://{vacant}/v1/chat/completions")),
        "{reason}"
    );

    let unknown = harness.chat.send(
        harness.conversation(8),
        "Hi",
        ReplyTarget {
            model_id: "remote-99/x".into(),
            owner: "main".into(),
            sink: Arc::new(Sink(mpsc::unbounded_channel().0)),
        },
    );
    assert!(unknown.unwrap_err().to_string().contains("no remote server 'remote-99'"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_reply_can_be_stopped_and_keeps_its_text() {
    let harness = Harness::new();
    let base = listen(stand_in()).await;
    let endless = harness.add(&format!("{base}/endless/v1"), None).await;
    let (conversation_id, generation_id, mut events) = harness.send(&format!("{endless}/model"));
    let mut tokens = 0;
    while tokens < 3 {
        let event = tokio::time::timeout(WAIT, events.recv()).await.unwrap().unwrap();
        tokens += usize::from(matches!(event, GenerationEvent::Token { .. }));
    }
    assert!(harness.chat.stop(generation_id));
    let events = until_end(&mut events).await;
    let Some(GenerationEvent::Done { message }) = events.last() else { panic!("{events:?}") };
    assert_eq!(message.generation.as_ref().unwrap().finish_reason, FinishReason::Cancelled);
    assert!(message.content.starts_with("la la la"), "{}", message.content);
    assert_eq!(harness.db.thread(conversation_id).unwrap()[1].message.content, message.content);
    // Stopped means gone: a second stop finds nothing.
    assert!(!harness.chat.stop(generation_id));
}

#[tokio::test(flavor = "multi_thread")]
async fn another_doppler_serves_as_a_remote_backend() {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hf/llama3/model.gguf");
    let worker = Arc::new(doppler_server::Worker::<String>::spawn(EngineOptions::default(), 4));
    let loading = worker.clone();
    let info = tokio::task::spawn_blocking(move || {
        loading.load_and_wait(LoadRequest {
            model_id: "tiny-llama3".into(),
            path: model,
            context_len: Some(256),
        })
    })
    .await
    .unwrap()
    .expect("the tiny Llama 3 loads");
    let state = doppler_server::ServerState::new(worker, "tiny-llama3".into(), info.context_len, None);
    let base = listen(doppler_server::router(Arc::new(state))).await;

    let harness = Harness::new();
    let backend_id = harness.add(&format!("{base}/v1"), None).await;
    let lists = harness.backends.models().await.unwrap();
    let model_id = format!("{backend_id}/tiny-llama3");
    assert_eq!(lists[0].model_ids, vec![model_id.clone()]);

    let (conversation_id, _, mut events) = harness.send(&model_id);
    let events = until_end(&mut events).await;
    let Some(GenerationEvent::Done { message }) = events.last() else { panic!("{events:?}") };
    assert_eq!(message.content, streamed(&events));
    let stats = message.generation.as_ref().unwrap();
    assert!(stats.prompt_tokens > 0 && stats.generated_tokens > 0, "{stats:?}");
    assert_eq!(harness.db.thread(conversation_id).unwrap()[1].message.content, message.content);
}
