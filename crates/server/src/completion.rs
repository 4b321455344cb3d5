//! Running a chat or text completion and answering in OpenAI's shape, whole or streamed.

use std::{
    convert::Infallible,
    time::{SystemTime, UNIX_EPOCH},
};

use axum::{
    body::Body,
    http::header,
    response::{IntoResponse, Response},
    Json,
};
use doppler_engine::{GenerateOptions, GenerationSummary};
use doppler_runtime::{GenerationRequest, Prompt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::{
    api_error::ApiError,
    generation::{finish_reason, Event, Generation},
    RequestKey, ServerState,
};

/// Stream frames buffered for a slow client before the generation waits for it.
const FRAMES_IN_FLIGHT: usize = 32;

/// Which endpoint answers: the two differ only in the shapes of their bodies.
#[derive(Clone, Copy)]
pub enum Endpoint {
    Chat,
    Text,
}

/// A checked request, ready to run.
pub struct Completion {
    pub endpoint: Endpoint,
    pub model: String,
    pub prompt: Prompt,
    pub options: GenerateOptions,
    pub stream: bool,
    pub include_usage: bool,
}

impl Endpoint {
    fn id_prefix(self) -> &'static str {
        match self {
            Endpoint::Chat => "chatcmpl",
            Endpoint::Text => "cmpl",
        }
    }

    fn object(self, streamed: bool) -> &'static str {
        match (self, streamed) {
            (Endpoint::Chat, false) => "chat.completion",
            (Endpoint::Chat, true) => "chat.completion.chunk",
            (Endpoint::Text, _) => "text_completion",
        }
    }

    fn whole_choice(self, text: &str, finish: &str) -> Value {
        match self {
            Endpoint::Chat => json!({
                "index": 0,
                "message": { "role": "assistant", "content": text, "refusal": null },
                "logprobs": null,
                "finish_reason": finish,
            }),
            Endpoint::Text => json!({ "index": 0, "text": text, "logprobs": null, "finish_reason": finish }),
        }
    }

    /// A streamed piece of text, or the end when `finish` is given.
    fn chunk_choice(self, text: &str, finish: Option<&str>) -> Value {
        match self {
            Endpoint::Chat if finish.is_some() => {
                json!({ "index": 0, "delta": {}, "logprobs": null, "finish_reason": finish })
            }
            Endpoint::Chat => {
                json!({ "index": 0, "delta": { "content": text }, "logprobs": null, "finish_reason": null })
            }
            Endpoint::Text => json!({ "index": 0, "text": text, "logprobs": null, "finish_reason": finish }),
        }
    }
}

/// Queues the completion and answers once its first token (or its failure) is known, so a
/// request that cannot run gets an error status even when it asked for a stream.
pub async fn answer<K: RequestKey>(
    state: &ServerState<K>,
    completion: Completion,
) -> Result<Response, ApiError> {
    if completion.model != state.model_id {
        return Err(ApiError::UnknownModel(completion.model));
    }
    let id = format!("{}-{}", completion.endpoint.id_prefix(), state.next_request_number());
    let request = GenerationRequest {
        model_id: state.model_id.clone(),
        owner: id.clone(),
        key: K::from(id.clone()),
        prompt: completion.prompt,
        options: completion.options,
    };
    let mut generation = Generation::start(state.worker.clone(), state.metrics.clone(), request)?;
    let first = generation.next().await;
    if let Event::Finished(Err(error)) = first {
        return Err(error);
    }
    let header = Header { endpoint: completion.endpoint, id, model: state.model_id.clone(), created: now() };
    if completion.stream {
        Ok(stream(header, generation, first, completion.include_usage))
    } else {
        let mut event = first;
        loop {
            match event {
                Event::Token(_) => event = generation.next().await,
                Event::Finished(result) => return Ok(Json(header.whole(&result?)).into_response()),
            }
        }
    }
}

/// What every body of one completion repeats.
struct Header {
    endpoint: Endpoint,
    id: String,
    model: String,
    created: u64,
}

impl Header {
    fn whole(&self, summary: &GenerationSummary) -> Value {
        json!({
            "id": self.id,
            "object": self.endpoint.object(false),
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": [self.endpoint.whole_choice(&summary.text, finish_reason(summary.stop_reason))],
            "usage": usage(summary),
        })
    }

    /// `include_usage` asks for `"usage": null` on every chunk but the usage one.
    fn chunk(&self, choices: Value, include_usage: bool) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": self.endpoint.object(true),
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": choices,
        });
        if include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }
}

fn usage(summary: &GenerationSummary) -> Value {
    json!({
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.generated_tokens,
        "total_tokens": summary.prompt_tokens + summary.generated_tokens,
    })
}

/// Server-sent events: a task follows the generation and writes frames to the body; when the
/// client goes away the body is dropped, the task's next write fails and it drops the
/// generation, which cancels it.
fn stream<K: RequestKey>(
    header: Header,
    mut generation: Generation<K>,
    first: Event,
    include_usage: bool,
) -> Response {
    let (frames, body) = mpsc::channel::<String>(FRAMES_IN_FLIGHT);
    tokio::spawn(async move {
        let send = |value: String| frames.send(format!("data: {value}\n\n"));
        if matches!(header.endpoint, Endpoint::Chat) {
            let role = json!([{ "index": 0, "delta": { "role": "assistant", "content": "" }, "logprobs": null, "finish_reason": null }]);
            if send(header.chunk(role, include_usage).to_string()).await.is_err() {
                return;
            }
        }
        let mut event = first;
        loop {
            match event {
                Event::Token(text) => {
                    let choice = header.endpoint.chunk_choice(&text, None);
                    if send(header.chunk(json!([choice]), include_usage).to_string()).await.is_err() {
                        return;
                    }
                }
                Event::Finished(Ok(summary)) => {
                    let choice = header.endpoint.chunk_choice("", Some(finish_reason(summary.stop_reason)));
                    let _ = send(header.chunk(json!([choice]), include_usage).to_string()).await;
                    if include_usage {
                        let mut last = header.chunk(json!([]), false);
                        last["usage"] = usage(&summary);
                        let _ = send(last.to_string()).await;
                    }
                    let _ = send("[DONE]".to_string()).await;
                    return;
                }
                Event::Finished(Err(error)) => {
                    let _ = send(error.body().to_string()).await;
                    return;
                }
            }
            event = generation.next().await;
        }
    });
    let body = futures_util::stream::unfold(body, |mut body| async move {
        body.recv().await.map(|frame| (Ok::<_, Infallible>(frame), body))
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
        Body::from_stream(body),
    )
        .into_response()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
