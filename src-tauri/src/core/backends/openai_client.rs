//! Talking to an OpenAI-compatible server: `GET /models`, and `POST /chat/completions`
//! streamed as server-sent events, turned into the tokens and summary the chat expects.

use std::time::Instant;

use doppler_engine::{ChatMessage, GenerateOptions, GenerationSummary, StopReason};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::{Client, RequestBuilder, Response};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::BackendError;

/// One backend as a request needs it.
pub(super) struct Endpoint {
    pub name: String,
    pub base_url: String,
    pub api_key: Option<String>,
}

impl Endpoint {
    fn get(&self, client: &Client, path: &str) -> RequestBuilder {
        self.authorized(client.get(self.url(path)))
    }

    fn post(&self, client: &Client, path: &str) -> RequestBuilder {
        self.authorized(client.post(self.url(path)))
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url.trim_end_matches('/'))
    }

    fn authorized(&self, request: RequestBuilder) -> RequestBuilder {
        match &self.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    fn unreachable(&self, path: &str, error: &reqwest::Error) -> BackendError {
        BackendError::Unreachable { name: self.name.clone(), url: self.url(path), reason: error_chain(error) }
    }

    fn broken_off(&self, reason: impl Into<String>) -> BackendError {
        BackendError::BrokenOff { name: self.name.clone(), reason: reason.into() }
    }

    fn protocol(&self, reason: impl Into<String>) -> BackendError {
        BackendError::Protocol { name: self.name.clone(), reason: reason.into() }
    }

    /// A status other than success, with the message of an OpenAI-shaped error body if it has one.
    async fn refusal(&self, response: Response) -> BackendError {
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|value| value["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| body.chars().take(300).collect::<String>());
        let message = if message.trim().is_empty() { "no details given".to_string() } else { message };
        match status {
            401 | 403 => BackendError::Unauthorized { name: self.name.clone(), status, message },
            _ => BackendError::Status { name: self.name.clone(), status, message },
        }
    }
}

/// The ids of the models the server lists.
pub(super) async fn list_models(client: &Client, endpoint: &Endpoint) -> Result<Vec<String>, BackendError> {
    let response =
        endpoint.get(client, "models").send().await.map_err(|e| endpoint.unreachable("models", &e))?;
    if !response.status().is_success() {
        return Err(endpoint.refusal(response).await);
    }
    let body: Value = response.json().await.map_err(|error| endpoint.protocol(error_chain(&error)))?;
    let models = body["data"].as_array().ok_or_else(|| endpoint.protocol("the model list has no `data`"))?;
    Ok(models.iter().filter_map(|model| model["id"].as_str().map(str::to_string)).collect())
}

/// What a streamed reply tells its follower, in order: `Started` once the server accepted
/// the request, `Token`s, then its end.
pub enum StreamEvent<'a> {
    Started,
    Token(&'a str),
}

/// Streams a chat reply; `on_event` hears it start and each piece of text. A stop through
/// `cancel` ends it like a local stop: what came so far, as a finished reply. A reply the
/// server broke off fails, and the text so far went to `on_event` already.
pub(super) async fn stream_chat(
    client: &Client,
    endpoint: &Endpoint,
    model: &str,
    messages: &[ChatMessage],
    options: &GenerateOptions,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<GenerationSummary, BackendError> {
    let body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_tokens": options.max_tokens,
        "temperature": options.sampling.temperature,
        "top_p": options.sampling.top_p,
        "seed": options.sampling.seed,
    });
    let path = "chat/completions";
    let submitted = Instant::now();
    let send = endpoint.post(client, path).json(&body).send();
    let response = tokio::select! {
        response = send => response.map_err(|error| endpoint.unreachable(path, &error))?,
        () = cancel.cancelled() => return Ok(Reply::default().summary(StopReason::Cancelled, submitted)),
    };
    if !response.status().is_success() {
        return Err(endpoint.refusal(response).await);
    }
    on_event(StreamEvent::Started);
    let mut events = response.bytes_stream().eventsource();
    let mut reply = Reply::default();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            // Dropping the stream closes the connection: the server stops generating.
            () = cancel.cancelled() => return Ok(reply.summary(StopReason::Cancelled, submitted)),
        };
        let data = match event {
            Some(Ok(event)) => event.data,
            Some(Err(error)) => return Err(endpoint.broken_off(error.to_string())),
            None if reply.finish.is_some() => return Ok(reply.finished(submitted)),
            None => return Err(endpoint.broken_off("the connection closed before the reply was finished")),
        };
        if data.trim() == "[DONE]" {
            return Ok(reply.finished(submitted));
        }
        let chunk: Value = serde_json::from_str(&data)
            .map_err(|error| endpoint.protocol(format!("a stream event is not JSON ({error}): {data}")))?;
        if let Some(message) = chunk["error"]["message"].as_str() {
            return Err(BackendError::Status {
                name: endpoint.name.clone(),
                status: 200,
                message: message.to_string(),
            });
        }
        let choice = &chunk["choices"][0];
        if let Some(text) = choice["delta"]["content"].as_str().filter(|text| !text.is_empty()) {
            reply.first_token.get_or_insert_with(|| submitted.elapsed().as_secs_f64() * 1000.0);
            reply.text.push_str(text);
            reply.chunks += 1;
            on_event(StreamEvent::Token(text));
        }
        if let Some(finish) = choice["finish_reason"].as_str() {
            reply.finish = Some(finish.to_string());
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            reply.prompt_tokens = usage["prompt_tokens"].as_u64().map(|n| n as usize);
            reply.completion_tokens = usage["completion_tokens"].as_u64().map(|n| n as usize);
        }
    }
}

/// A reply as it streams in.
#[derive(Default)]
struct Reply {
    text: String,
    /// Content chunks: the token count when the server reports no usage.
    chunks: usize,
    first_token: Option<f64>,
    finish: Option<String>,
    prompt_tokens: Option<usize>,
    completion_tokens: Option<usize>,
}

impl Reply {
    fn finished(self, submitted: Instant) -> GenerationSummary {
        let stop = match self.finish.as_deref() {
            Some("length") => StopReason::MaxTokens,
            _ => StopReason::Eos,
        };
        self.summary(stop, submitted)
    }

    fn summary(self, stop_reason: StopReason, submitted: Instant) -> GenerationSummary {
        let total_ms = submitted.elapsed().as_secs_f64() * 1000.0;
        let time_to_first_token_ms = self.first_token.unwrap_or(total_ms);
        let generated_tokens = self.completion_tokens.unwrap_or(self.chunks);
        let decode_ms = total_ms - time_to_first_token_ms;
        let tokens_per_second = match generated_tokens > 1 && decode_ms > 0.0 {
            true => (generated_tokens - 1) as f64 / (decode_ms / 1000.0),
            false => 0.0,
        };
        let prompt_tokens = self.prompt_tokens.unwrap_or(0);
        GenerationSummary {
            prompt_tokens,
            prefilled_tokens: prompt_tokens,
            generated_tokens,
            tokens: Vec::new(),
            text: self.text,
            stop_reason,
            time_to_first_token_ms,
            prefill_ms: time_to_first_token_ms,
            decode_ms,
            decode_recording_ms: 0.0,
            decode_submits: 0,
            tokens_per_second,
        }
    }
}

/// reqwest's message and its causes ("error sending request: … Connection refused").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
