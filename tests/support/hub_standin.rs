//! A stand-in for the Hugging Face Hub on 127.0.0.1, speaking the parts of its API that
//! DOPPLER uses (search by format tag, tree, `resolve` with a 302 to a "CDN" path carrying `X-Linked-Etag`
//! and `X-Linked-Size`, Range requests), with faults to inject into the downloads it serves.

// Each test binary uses a part of the stand-in.
#![allow(dead_code)]

use std::{
    collections::{HashMap, VecDeque},
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Path, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use sha2::{Digest, Sha256};

/// The small real model the stand-in serves, so that a pulled model loads.
pub fn llama_gguf() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/hf/llama3/model.gguf"))
        .expect("tests/data/hf/llama3/model.gguf (run `make test-models`)")
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A file of a stand-in repository; what the tree and the redirect say about it may be set
/// to lie.
#[derive(Clone)]
pub struct StandinFile {
    pub path: String,
    pub bytes: Arc<Vec<u8>>,
    pub listed_size: u64,
    pub listed_sha256: String,
    /// Stored with Git LFS (weights): the tree gives its sha256. Small files (config.json) are
    /// plain git files, listed with their size only.
    pub lfs: bool,
}

impl StandinFile {
    pub fn new(path: &str, bytes: Vec<u8>) -> StandinFile {
        StandinFile {
            path: path.to_string(),
            listed_size: bytes.len() as u64,
            listed_sha256: sha256_hex(&bytes),
            bytes: Arc::new(bytes),
            lfs: true,
        }
    }

    /// A plain git file: no sha256 in the tree.
    pub fn plain(path: &str, bytes: Vec<u8>) -> StandinFile {
        StandinFile { lfs: false, ..StandinFile::new(path, bytes) }
    }
}

/// What goes wrong with the next download request (one fault per request, in order).
#[derive(Clone, Debug)]
pub enum Fault {
    /// Sends the file as it is (a request the faults after it leave alone).
    Clean,
    /// Closes the connection after this many bytes of the body.
    DropAfter(u64),
    /// Sends this many bytes, then nothing for the duration.
    StallAfter(u64, Duration),
    /// Answers with this status and no file.
    Status(u16),
    /// Sends the byte at this file offset changed.
    CorruptByte(u64),
}

/// A slow connection: the first `fast_bytes` at once, then `chunk` bytes per `interval`.
#[derive(Clone, Copy, Debug)]
pub struct Trickle {
    pub fast_bytes: u64,
    pub chunk: usize,
    pub interval: Duration,
}

struct Repo {
    files: Vec<StandinFile>,
    token: Option<String>,
}

#[derive(Default)]
struct Shared {
    repos: Mutex<HashMap<String, Repo>>,
    faults: Mutex<VecDeque<Fault>>,
    trickle: Mutex<Option<Trickle>>,
    /// The first byte each download request asked for (`None`: no Range header).
    range_starts: Mutex<Vec<Option<u64>>>,
}

pub struct HubStandin {
    /// `http://127.0.0.1:<port>`, for `HF_ENDPOINT`.
    pub url: String,
    shared: Arc<Shared>,
    _runtime: tokio::runtime::Runtime,
}

impl HubStandin {
    pub fn start() -> HubStandin {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let shared = Arc::new(Shared::default());
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new()
            .route("/api/models", get(search))
            .route("/api/models/{owner}/{name}/tree/{revision}", get(tree))
            .route("/{owner}/{name}/resolve/{revision}/{*path}", get(resolve))
            .route("/cdn/{owner}/{name}/{*path}", get(cdn))
            .with_state(shared.clone());
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        HubStandin { url, shared, _runtime: runtime }
    }

    pub fn add_repo(&self, id: &str, files: Vec<StandinFile>) {
        self.shared.repos.lock().unwrap().insert(id.to_string(), Repo { files, token: None });
    }

    /// Makes `id` answer 401 unless asked with `token`.
    pub fn gate_repo(&self, id: &str, token: &str) {
        self.shared.repos.lock().unwrap().get_mut(id).unwrap().token = Some(token.to_string());
    }

    pub fn push_fault(&self, fault: Fault) {
        self.shared.faults.lock().unwrap().push_back(fault);
    }

    pub fn set_trickle(&self, trickle: Option<Trickle>) {
        *self.shared.trickle.lock().unwrap() = trickle;
    }

    /// The first byte each download request so far asked for.
    pub fn range_starts(&self) -> Vec<Option<u64>> {
        self.shared.range_starts.lock().unwrap().clone()
    }
}

fn json(value: serde_json::Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn authorized(repo: &Repo, headers: &HeaderMap) -> bool {
    let sent = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    repo.token.as_ref().is_none_or(|token| sent == Some(&format!("Bearer {token}")))
}

/// Answers as the Hub does: repositories whose id holds `search` and that carry the `filter`
/// tag, which the stand-in gives a repository holding a file of that format.
async fn search(State(shared): State<Arc<Shared>>, Query(query): Query<HashMap<String, String>>) -> Response {
    let needle = query.get("search").cloned().unwrap_or_default().to_lowercase();
    let limit: usize = query.get("limit").and_then(|limit| limit.parse().ok()).unwrap_or(1000);
    let repos = shared.repos.lock().unwrap();
    let mut found: Vec<(&String, Vec<&str>)> = repos
        .iter()
        .filter(|(id, _)| id.to_lowercase().contains(&needle))
        .map(|(id, repo)| (id, format_tags(repo)))
        .filter(|(_, tags)| query.get("filter").is_none_or(|filter| tags.contains(&filter.as_str())))
        .collect();
    found.sort();
    let models: Vec<serde_json::Value> = found
        .into_iter()
        .take(limit)
        .map(|(id, mut tags)| {
            tags.push("llama");
            serde_json::json!({
                "_id": "65f0c0ffee", "id": id, "modelId": id, "likes": 7, "downloads": 1234,
                "private": false, "tags": tags, "pipeline_tag": "text-generation",
                "createdAt": "2026-01-01T00:00:00.000Z"
            })
        })
        .collect();
    json(serde_json::Value::Array(models))
}

/// The Hub's format tags for what `repo` holds.
fn format_tags(repo: &Repo) -> Vec<&'static str> {
    let holds = |extension: &str| repo.files.iter().any(|file| file.path.ends_with(extension));
    [(".gguf", "gguf"), (".safetensors", "safetensors")]
        .into_iter()
        .filter(|(extension, _)| holds(extension))
        .map(|(_, tag)| tag)
        .collect()
}

async fn tree(
    State(shared): State<Arc<Shared>>,
    Path((owner, name, _revision)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let repos = shared.repos.lock().unwrap();
    let Some(repo) = repos.get(&format!("{owner}/{name}")) else {
        return (StatusCode::UNAUTHORIZED, "Repository not found").into_response();
    };
    if !authorized(repo, &headers) {
        return (StatusCode::UNAUTHORIZED, "Access to this repository is restricted").into_response();
    }
    let mut entries = vec![serde_json::json!({
        "type": "file", "oid": "0123456789abcdef0123456789abcdef01234567", "size": 42, "path": "README.md"
    })];
    for file in &repo.files {
        if let Some((dir, _)) = file.path.rsplit_once('/') {
            entries.push(serde_json::json!({ "type": "directory", "oid": "0123", "size": 0, "path": dir }));
        }
        let mut entry = serde_json::json!({
            "type": "file", "oid": "89abcdef0123456789abcdef0123456789abcdef", "size": file.listed_size,
            "path": file.path
        });
        if file.lfs {
            entry["lfs"] = serde_json::json!({ "oid": file.listed_sha256, "size": file.listed_size, "pointerSize": 134 });
        }
        entries.push(entry);
    }
    json(serde_json::Value::Array(entries))
}

async fn resolve(
    State(shared): State<Arc<Shared>>,
    Path((owner, name, _revision, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let repos = shared.repos.lock().unwrap();
    let Some(repo) = repos.get(&format!("{owner}/{name}")) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    if !authorized(repo, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(file) = repo.files.iter().find(|file| file.path == path) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    Response::builder()
        .status(StatusCode::FOUND)
        .header(header::LOCATION, format!("/cdn/{owner}/{name}/{path}"))
        .header("x-linked-etag", format!("\"{}\"", file.listed_sha256))
        .header("x-linked-size", file.listed_size.to_string())
        .header(header::ETAG, "\"0123\"")
        .body(Body::empty())
        .unwrap()
}

async fn cdn(
    State(shared): State<Arc<Shared>>,
    Path((owner, name, path)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let file = {
        let repos = shared.repos.lock().unwrap();
        repos
            .get(&format!("{owner}/{name}"))
            .and_then(|repo| repo.files.iter().find(|file| file.path == path).cloned())
    };
    let Some(file) = file else { return StatusCode::NOT_FOUND.into_response() };
    let range_start: Option<u64> = headers
        .get(header::RANGE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("bytes=")?.strip_suffix('-')?.parse().ok());
    shared.range_starts.lock().unwrap().push(range_start);
    let fault = shared.faults.lock().unwrap().pop_front();
    if let Some(Fault::Status(status)) = fault {
        return StatusCode::from_u16(status).unwrap().into_response();
    }
    let len = file.bytes.len() as u64;
    let start = range_start.unwrap_or(0);
    if start >= len {
        return Response::builder()
            .status(StatusCode::RANGE_NOT_SATISFIABLE)
            .header(header::CONTENT_RANGE, format!("bytes */{len}"))
            .body(Body::empty())
            .unwrap();
    }
    let mut response = Response::builder().header(header::CONTENT_LENGTH, (len - start).to_string());
    response = match range_start {
        Some(start) => response
            .status(StatusCode::PARTIAL_CONTENT)
            .header(header::CONTENT_RANGE, format!("bytes {start}-{}/{len}", len - 1)),
        None => response.status(StatusCode::OK),
    };
    let trickle = *shared.trickle.lock().unwrap();
    let plan = BodyPlan { bytes: file.bytes, position: start, sent: 0, fault, trickle };
    response.body(Body::from_stream(futures_util::stream::unfold(plan, next_chunk))).unwrap()
}

struct BodyPlan {
    bytes: Arc<Vec<u8>>,
    /// The next file offset to send.
    position: u64,
    /// Bytes of this body sent so far.
    sent: u64,
    fault: Option<Fault>,
    trickle: Option<Trickle>,
}

const CHUNK: u64 = 64 * 1024;

async fn next_chunk(mut plan: BodyPlan) -> Option<(io::Result<Bytes>, BodyPlan)> {
    let len = plan.bytes.len() as u64;
    if plan.position >= len {
        return None;
    }
    let mut chunk = CHUNK;
    match plan.fault {
        Some(Fault::DropAfter(after)) if plan.sent >= after => {
            plan.position = len;
            return Some((Err(io::Error::other("the stand-in dropped the connection")), plan));
        }
        Some(Fault::DropAfter(after)) => chunk = chunk.min(after - plan.sent),
        Some(Fault::StallAfter(after, pause)) if plan.sent >= after => {
            tokio::time::sleep(pause).await;
            plan.fault = None;
        }
        Some(Fault::StallAfter(after, _)) => chunk = chunk.min(after - plan.sent),
        _ => {}
    }
    if let Some(trickle) = plan.trickle.filter(|trickle| plan.sent >= trickle.fast_bytes) {
        tokio::time::sleep(trickle.interval).await;
        chunk = chunk.min(trickle.chunk as u64);
    }
    let end = (plan.position + chunk).min(len);
    let mut bytes = plan.bytes[plan.position as usize..end as usize].to_vec();
    if let Some(Fault::CorruptByte(offset)) = plan.fault {
        if (plan.position..end).contains(&offset) {
            bytes[(offset - plan.position) as usize] ^= 0xff;
        }
    }
    plan.sent += end - plan.position;
    plan.position = end;
    Some((Ok(Bytes::from(bytes)), plan))
}
