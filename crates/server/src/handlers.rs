//! The routes: each handler checks its input and hands it to [`crate::completion`].

use std::sync::Arc;

use axum::{
    body::Bytes,
    extract::{rejection::BytesRejection, DefaultBodyLimit, MatchedPath, Request, State},
    http::{header, StatusCode, Uri},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use doppler_runtime::Prompt;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::{
    api_error::ApiError,
    completion::{answer, Completion, Endpoint},
    wire_request::{ChatCompletionRequest, CompletionRequest, GenerationFields},
    RequestKey, ServerState,
};

pub fn router<K: RequestKey>(state: Arc<ServerState<K>>) -> Router {
    Router::new()
        .route("/v1/models", get(models::<K>))
        .route("/v1/chat/completions", post(chat_completions::<K>))
        .route("/v1/completions", post(completions::<K>))
        .route("/metrics", get(metrics::<K>))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_api_key::<K>))
        // Open to liveness probes.
        .route("/health", get(health::<K>))
        .fallback(unknown_path)
        .layer(DefaultBodyLimit::max(state.body_limit))
        .layer(middleware::from_fn_with_state(state.clone(), count_request::<K>))
        .with_state(state)
}

async fn models<K: RequestKey>(State(state): State<Arc<ServerState<K>>>) -> Json<serde_json::Value> {
    Json(json!({
        "object": "list",
        "data": [{ "id": state.model_id, "object": "model", "created": state.started, "owned_by": "doppler" }],
    }))
}

async fn chat_completions<K: RequestKey>(
    State(state): State<Arc<ServerState<K>>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: ChatCompletionRequest = parse(&state, body)?;
    let max_tokens = request.max_tokens()?;
    let prompt = request.prompt()?;
    let completion =
        completion(&state, Endpoint::Chat, request.model, prompt, max_tokens, &request.generation)?;
    answer(&state, completion).await
}

async fn completions<K: RequestKey>(
    State(state): State<Arc<ServerState<K>>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: CompletionRequest = parse(&state, body)?;
    let max_tokens = request.generation.max_tokens()?;
    let prompt = request.prompt()?;
    let completion =
        completion(&state, Endpoint::Text, request.model, prompt, max_tokens, &request.generation)?;
    answer(&state, completion).await
}

/// What both endpoints run, once each has checked the fields it alone has.
fn completion<K>(
    state: &ServerState<K>,
    endpoint: Endpoint,
    model: String,
    prompt: Prompt,
    max_tokens: Option<u32>,
    generation: &GenerationFields,
) -> Result<Completion, ApiError> {
    Ok(Completion {
        endpoint,
        model,
        prompt,
        options: generation.options(max_tokens, state.context_len)?,
        stream: generation.stream,
        include_usage: generation.include_usage(),
    })
}

async fn health<K: RequestKey>(State(state): State<Arc<ServerState<K>>>) -> Json<serde_json::Value> {
    let queue = state.worker.queue();
    Json(json!({
        "status": "ok",
        "model": state.model_id,
        "running": usize::from(queue.running.is_some()),
        "waiting": queue.waiting.len(),
    }))
}

async fn metrics<K: RequestKey>(State(state): State<Arc<ServerState<K>>>) -> Response {
    let text = state.metrics.render(&state.worker.queue());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn unknown_path(uri: Uri) -> ApiError {
    ApiError::UnknownPath(uri.path().to_string())
}

fn parse<T: DeserializeOwned, K>(
    state: &ServerState<K>,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge { limit: state.body_limit },
        _ => ApiError::MalformedBody(rejection.body_text()),
    })?;
    serde_json::from_slice(&body).map_err(|error| ApiError::MalformedBody(error.to_string()))
}

/// With a key set, every route but `/health` wants `Authorization: Bearer <key>`.
async fn require_api_key<K: RequestKey>(
    State(state): State<Arc<ServerState<K>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(key) = &state.api_key {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        if !given.is_some_and(|given| same_secret(given.as_bytes(), key.as_bytes())) {
            return ApiError::BadApiKey.into_response();
        }
    }
    next.run(request).await
}

/// Compares without stopping at the first difference, so timing tells nothing of the key.
fn same_secret(given: &[u8], key: &[u8]) -> bool {
    given.len() == key.len() && given.iter().zip(key).fold(0, |diff, (a, b)| diff | (a ^ b)) == 0
}

async fn count_request<K: RequestKey>(
    State(state): State<Arc<ServerState<K>>>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |path| path.as_str().to_string());
    let response = next.run(request).await;
    state.metrics.request_answered(&route, response.status().as_u16());
    response
}
