//! `doppler-server` over real sockets: the server runs in-process on 127.0.0.1:0 over a real
//! worker (lavapipe where there is no GPU) with the tiny random-weight Llama 3 of
//! tests/data/hf/llama3, and reqwest talks to it as any OpenAI client would.

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use doppler_engine::EngineOptions;
use doppler_runtime::LoadRequest;
use doppler_server::{router, ServerState, Worker};
use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};

const MODEL: &str = "tiny-llama3";
const KEY: &str = "sk-test-key";
/// Small so that the 413 case needs no large upload.
const BODY_LIMIT: usize = 64 * 1024;

struct Servers {
    /// No key.
    open: String,
    /// Wants `KEY`; shares the worker.
    keyed: String,
    client: Client,
}

async fn start(state: ServerState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum_serve(listener, state).await });
    format!("http://{address}")
}

async fn axum_serve(listener: tokio::net::TcpListener, state: ServerState) {
    doppler_server::serve(listener, router(Arc::new(state)), std::future::pending()).await.unwrap();
}

async fn servers() -> Servers {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf");
    // Two generations may wait behind the running one: a fourth is refused.
    let worker = Arc::new(Worker::spawn(EngineOptions::default(), 2));
    let loading = worker.clone();
    let info = tokio::task::spawn_blocking(move || {
        loading.load_and_wait(LoadRequest { model_id: MODEL.into(), path: model, context_len: Some(512) })
    })
    .await
    .unwrap()
    .expect("the tiny Llama 3 loads");
    let state = |api_key: Option<&str>| {
        let mut state =
            ServerState::new(worker.clone(), MODEL.into(), info.context_len, api_key.map(String::from));
        state.body_limit = BODY_LIMIT;
        state
    };
    Servers { open: start(state(None)).await, keyed: start(state(Some(KEY))).await, client: Client::new() }
}

impl Servers {
    async fn post(&self, path: &str, body: Value) -> Response {
        self.client.post(format!("{}{path}", self.open)).json(&body).send().await.unwrap()
    }

    async fn get(&self, path: &str) -> Response {
        self.client.get(format!("{}{path}", self.open)).send().await.unwrap()
    }

    async fn health(&self) -> Value {
        self.get("/health").await.json().await.unwrap()
    }

    /// Waits until the queue holds `running` and `waiting` generations.
    async fn wait_for_queue(&self, running: u64, waiting: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let health = self.health().await;
            if health["running"] == running && health["waiting"] == waiting {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the queue never reached {running} running, {waiting} waiting: {health}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn chat(max_tokens: u32, stream: bool) -> Value {
    json!({
        "model": MODEL,
        "messages": [{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "Name a colour." }],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
        "stream_options": if stream { json!({ "include_usage": true }) } else { Value::Null },
    })
}

/// The `data:` payloads of a finished event stream, `[DONE]` included.
async fn events(response: Response) -> Vec<String> {
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    text.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            frame
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not an SSE data frame: {frame:?}"))
                .to_string()
        })
        .collect()
}

fn streamed_text(events: &[String]) -> String {
    events
        .iter()
        .filter(|event| *event != "[DONE]")
        .filter_map(|event| {
            serde_json::from_str::<Value>(event).unwrap()["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

async fn assert_error(
    response: Response,
    status: StatusCode,
    param: Option<&str>,
    code: Option<&str>,
) -> String {
    assert_eq!(response.status(), status);
    let body: Value = response.json().await.unwrap();
    let error = body["error"].as_object().unwrap_or_else(|| panic!("not an OpenAI error: {body}"));
    let message = error["message"].as_str().unwrap_or_else(|| panic!("no message: {body}"));
    assert!(!message.is_empty());
    assert!(error["type"].is_string(), "{body}");
    assert_eq!(error["param"].as_str(), param, "{body}");
    assert_eq!(error["code"].as_str(), code, "{body}");
    message.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_openai_api_over_loopback() {
    let s = servers().await;

    // Models.
    let models: Value = s.get("/v1/models").await.json().await.unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], MODEL);
    assert_eq!(models["data"][0]["object"], "model");

    // A plain chat completion, greedy.
    let response = s.post("/v1/chat/completions", chat(12, false)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let plain: Value = response.json().await.unwrap();
    assert_eq!(plain["object"], "chat.completion");
    assert!(plain["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(plain["model"], MODEL);
    let choice = &plain["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    let text = choice["message"]["content"].as_str().unwrap().to_string();
    let usage = plain["usage"].clone();
    let completion_tokens = usage["completion_tokens"].as_u64().unwrap();
    assert!((1..=12).contains(&completion_tokens), "{usage}");
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 5, "{usage}");
    assert_eq!(usage["total_tokens"], usage["prompt_tokens"].as_u64().unwrap() + completion_tokens);
    let expected_finish = if completion_tokens == 12 { "length" } else { "stop" };
    assert_eq!(choice["finish_reason"], expected_finish);

    // The same request streamed: the same text, usage in a last chunk of its own.
    let streamed = events(s.post("/v1/chat/completions", chat(12, true)).await).await;
    assert_eq!(streamed.last().unwrap(), "[DONE]");
    assert_eq!(streamed_text(&streamed), text, "streamed and plain greedy text agree");
    let chunks: Vec<Value> =
        streamed[..streamed.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    assert!(chunks
        .iter()
        .all(|chunk| chunk["object"] == "chat.completion.chunk" && chunk["id"] == chunks[0]["id"]));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"], usage);
    assert!(chunks[..chunks.len() - 1].iter().all(|chunk| chunk["usage"].is_null()));
    assert_eq!(chunks[chunks.len() - 2]["choices"][0]["finish_reason"], expected_finish);

    // A stop sequence: the text ends before it.
    if let Some(stop) = text.chars().nth(3).filter(|c| !c.is_whitespace()) {
        let mut request = chat(12, false);
        request["stop"] = json!([stop.to_string()]);
        let stopped: Value = s.post("/v1/chat/completions", request).await.json().await.unwrap();
        let stopped_text = stopped["choices"][0]["message"]["content"].as_str().unwrap();
        assert!(
            !stopped_text.contains(stop) && text.starts_with(stopped_text),
            "{stopped_text:?} of {text:?}"
        );
        assert_eq!(stopped["choices"][0]["finish_reason"], "stop");
    }

    // A text completion, whole and streamed.
    let completion =
        json!({ "model": MODEL, "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0 });
    let whole: Value = s.post("/v1/completions", completion.clone()).await.json().await.unwrap();
    assert_eq!(whole["object"], "text_completion");
    let completion_text = whole["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(whole["usage"]["completion_tokens"].as_u64().unwrap() <= 4);
    let mut streamed_request = completion.clone();
    streamed_request["stream"] = json!(true);
    let text_events = events(s.post("/v1/completions", streamed_request).await).await;
    let streamed_completion: String = text_events[..text_events.len() - 1]
        .iter()
        .map(|e| {
            serde_json::from_str::<Value>(e).unwrap()["choices"][0]["text"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(streamed_completion, completion_text);

    // Errors, in OpenAI's shape.
    let malformed =
        s.client.post(format!("{}/v1/chat/completions", s.open)).body("{\"model\": ").send().await.unwrap();
    assert_error(malformed, StatusCode::BAD_REQUEST, None, None).await;
    let mut negative = chat(4, false);
    negative["max_tokens"] = json!(-5);
    let message = assert_error(
        s.post("/v1/chat/completions", negative).await,
        StatusCode::BAD_REQUEST,
        Some("max_tokens"),
        None,
    )
    .await;
    assert!(message.contains("-5"), "{message}");
    let mut unknown = chat(4, false);
    unknown["model"] = json!("gpt-imaginary");
    assert_error(
        s.post("/v1/chat/completions", unknown).await,
        StatusCode::NOT_FOUND,
        Some("model"),
        Some("model_not_found"),
    )
    .await;
    let mut two = chat(4, false);
    two["n"] = json!(2);
    assert_error(s.post("/v1/chat/completions", two).await, StatusCode::BAD_REQUEST, Some("n"), None).await;
    let mut penalty = chat(4, false);
    penalty["frequency_penalty"] = json!(0.5);
    let message =
        assert_error(s.post("/v1/chat/completions", penalty).await, StatusCode::BAD_REQUEST, None, None)
            .await;
    assert!(message.contains("frequency_penalty"), "{message}");
    let mut hot = chat(4, false);
    hot["temperature"] = json!(3.5);
    assert_error(
        s.post("/v1/chat/completions", hot).await,
        StatusCode::BAD_REQUEST,
        Some("temperature"),
        None,
    )
    .await;
    let mut huge = chat(4, false);
    huge["messages"][1]["content"] = json!("x".repeat(BODY_LIMIT + 1));
    assert_error(
        s.post("/v1/chat/completions", huge).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        Some("request_too_large"),
    )
    .await;
    let mut long = chat(4, false);
    long["messages"][1]["content"] = json!("many words ".repeat(600));
    assert_error(
        s.post("/v1/chat/completions", long).await,
        StatusCode::BAD_REQUEST,
        Some("messages"),
        Some("context_length_exceeded"),
    )
    .await;
    assert_error(s.get("/v1/nothing").await, StatusCode::NOT_FOUND, None, Some("unknown_url")).await;

    // The API key.
    let keyed_models = format!("{}/v1/models", s.keyed);
    let missing = s.client.get(&keyed_models).send().await.unwrap();
    assert_error(missing, StatusCode::UNAUTHORIZED, None, Some("invalid_api_key")).await;
    let wrong = s.client.get(&keyed_models).bearer_auth("sk-wrong-key").send().await.unwrap();
    assert_error(wrong, StatusCode::UNAUTHORIZED, None, Some("invalid_api_key")).await;
    let right = s.client.get(&keyed_models).bearer_auth(KEY).send().await.unwrap();
    assert_eq!(right.status(), StatusCode::OK);
    let keyed_chat =
        s.client.post(format!("{}/v1/chat/completions", s.keyed)).json(&chat(4, false)).send().await.unwrap();
    assert_eq!(keyed_chat.status(), StatusCode::UNAUTHORIZED, "generation wants the key too");
    assert_eq!(s.client.get(format!("{}/health", s.keyed)).send().await.unwrap().status(), StatusCode::OK);

    // Two streams at once both complete, with the same greedy text.
    let (first, second) = tokio::join!(
        s.post("/v1/chat/completions", chat(6, true)),
        s.post("/v1/chat/completions", chat(6, true))
    );
    let (first, second) = tokio::join!(events(first), events(second));
    assert_eq!(first.last().unwrap(), "[DONE]");
    assert_eq!(second.last().unwrap(), "[DONE]");
    assert_eq!(streamed_text(&first), streamed_text(&second));

    // A full queue refuses with 429; a client that goes away is cancelled and frees the GPU.
    s.wait_for_queue(0, 0).await;
    let generated_before = generated_tokens(&s).await;
    let mut running = s.post("/v1/chat/completions", chat(400, true)).await;
    assert_eq!(running.status(), StatusCode::OK);
    assert!(running.chunk().await.unwrap().is_some(), "the stream starts");
    let waiting = |max_tokens: u32| {
        let (client, url) = (s.client.clone(), format!("{}/v1/chat/completions", s.open));
        tokio::spawn(async move { client.post(url).json(&chat(max_tokens, false)).send().await.unwrap() })
    };
    let (second, third) = (waiting(3), waiting(2));
    s.wait_for_queue(1, 2).await;
    let refused = s.post("/v1/chat/completions", chat(3, false)).await;
    assert!(refused.headers().contains_key("retry-after"));
    assert_error(refused, StatusCode::TOO_MANY_REQUESTS, None, Some("queue_full")).await;
    drop(running);
    let mut waited_tokens = 0;
    for waited in [second, third] {
        let waited = waited.await.unwrap();
        assert_eq!(waited.status(), StatusCode::OK, "the waiting requests run once the first is cancelled");
        let waited: Value = waited.json().await.unwrap();
        waited_tokens += waited["usage"]["completion_tokens"].as_u64().unwrap();
    }
    s.wait_for_queue(0, 0).await;
    let cancelled_tokens = generated_tokens(&s).await - generated_before - waited_tokens;
    assert!(cancelled_tokens < 400, "the abandoned stream stopped early ({cancelled_tokens} tokens)");

    // A client that gives up on a whole (unstreamed) answer cancels it too.
    let generated_before = generated_tokens(&s).await;
    let impatient = Client::builder().timeout(Duration::from_millis(500)).build().unwrap();
    let gave_up =
        impatient.post(format!("{}/v1/chat/completions", s.open)).json(&chat(400, false)).send().await;
    assert!(gave_up.is_err_and(|error| error.is_timeout()));
    s.wait_for_queue(0, 0).await;
    let cancelled_tokens = generated_tokens(&s).await - generated_before;
    assert!(cancelled_tokens < 400, "the abandoned request stopped early ({cancelled_tokens} tokens)");

    // Metrics.
    let metrics = s.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("doppler_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("doppler_http_requests_total{route=\"/v1/chat/completions\",status=\"429\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("doppler_queue_waiting 0"), "{metrics}");
    assert!(metrics.contains("doppler_generation_duration_seconds_bucket{le=\"+Inf\"}"), "{metrics}");
}

async fn generated_tokens(s: &Servers) -> u64 {
    let metrics = s.get("/metrics").await.text().await.unwrap();
    let line = metrics.lines().find(|line| line.starts_with("doppler_generated_tokens_total ")).unwrap();
    line.rsplit(' ').next().unwrap().parse().unwrap()
}
