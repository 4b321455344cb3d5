//! A bounded load on loopback: 8 clients each send 10 chat requests one after another (every
//! other one streamed) to `doppler-server` over one worker with the tiny random-weight Llama 3.
//! Every request must succeed and every streamed one end with `[DONE]`; p50 and p99 latency are
//! printed (`--nocapture`), not asserted: speed lives in benchmarks.

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use doppler_engine::EngineOptions;
use doppler_runtime::LoadRequest;
use doppler_server::{router, ServerState, Worker};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

const MODEL: &str = "tiny-llama3";
const CLIENTS: usize = 8;
const REQUESTS_PER_CLIENT: usize = 10;

async fn server() -> String {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf");
    // Room for every client's request: one runs, the rest wait.
    let worker = Arc::new(Worker::<String>::spawn(EngineOptions::default(), CLIENTS));
    let loading = worker.clone();
    let info = tokio::task::spawn_blocking(move || {
        loading.load_and_wait(LoadRequest { model_id: MODEL.into(), path: model, context_len: Some(256) })
    })
    .await
    .unwrap()
    .expect("the tiny Llama 3 loads");
    let state = Arc::new(ServerState::new(worker, MODEL.into(), info.context_len, None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        doppler_server::serve(listener, router(state), std::future::pending()).await.unwrap();
    });
    format!("http://{address}")
}

/// One request from `client` number `index`; returns its latency, failing on any error.
async fn request(http: &Client, base: &str, client: usize, index: usize) -> Duration {
    let stream = index % 2 == 1;
    let body = json!({
        "model": MODEL,
        "messages": [{ "role": "user", "content": format!("Client {client} asks question {index}.") }],
        "max_tokens": 8,
        "temperature": 0.7,
        "seed": client * 100 + index,
        "stream": stream,
    });
    let started = Instant::now();
    let response = http.post(format!("{base}/v1/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "client {client} request {index}");
    let text = response.text().await.unwrap();
    if stream {
        assert!(text.trim_end().ends_with("data: [DONE]"), "client {client} request {index}: {text}");
    } else {
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert!(
            answer["choices"][0]["finish_reason"].is_string(),
            "client {client} request {index}: {answer}"
        );
    }
    started.elapsed()
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_times_ten_requests_all_succeed() {
    let base = server().await;
    let http = Client::new();
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(REQUESTS_PER_CLIENT);
                for index in 0..REQUESTS_PER_CLIENT {
                    latencies.push(request(&http, &base, client, index).await);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(CLIENTS * REQUESTS_PER_CLIENT);
    for client in clients {
        latencies.extend(client.await.expect("a client finished without a failed request"));
    }
    let elapsed = started.elapsed();
    latencies.sort();
    assert_eq!(latencies.len(), CLIENTS * REQUESTS_PER_CLIENT);
    println!(
        "{} requests from {CLIENTS} clients in {:.2} s: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        latencies.len(),
        elapsed.as_secs_f64(),
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
    );
}
