//! Errors as OpenAI's API reports them: `{"error": {"message", "type", "param", "code"}}`
//! with the matching HTTP status.

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the request body is not valid JSON for this endpoint: {0}")]
    MalformedBody(String),
    #[error("{message}")]
    InvalidValue { param: &'static str, message: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("missing or incorrect API key; send it as `Authorization: Bearer <key>`")]
    BadApiKey,
    #[error("the model '{0}' does not exist; GET /v1/models lists the one served here")]
    UnknownModel(String),
    #[error("no such endpoint: {0}")]
    UnknownPath(String),
    #[error("the request body is larger than the server's limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("{0}")]
    QueueFull(String),
    #[error("{0}")]
    ContextLengthExceeded(String),
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("generation failed: {0}")]
    Generation(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::MalformedBody(_)
            | ApiError::InvalidValue { .. }
            | ApiError::Unsupported(_)
            | ApiError::ContextLengthExceeded(_) => StatusCode::BAD_REQUEST,
            ApiError::BadApiKey => StatusCode::UNAUTHORIZED,
            ApiError::UnknownModel(_) | ApiError::UnknownPath(_) => StatusCode::NOT_FOUND,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::QueueFull(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Generation(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The body, also sent as the last event of a stream that fails part-way.
    pub fn body(&self) -> serde_json::Value {
        let (kind, code) = match self {
            ApiError::MalformedBody(_) | ApiError::InvalidValue { .. } | ApiError::Unsupported(_) => {
                ("invalid_request_error", None)
            }
            ApiError::ContextLengthExceeded(_) => ("invalid_request_error", Some("context_length_exceeded")),
            ApiError::BadApiKey => ("invalid_request_error", Some("invalid_api_key")),
            ApiError::UnknownModel(_) => ("invalid_request_error", Some("model_not_found")),
            ApiError::UnknownPath(_) => ("invalid_request_error", Some("unknown_url")),
            ApiError::TooLarge { .. } => ("invalid_request_error", Some("request_too_large")),
            ApiError::QueueFull(_) => ("rate_limit_error", Some("queue_full")),
            ApiError::ShuttingDown | ApiError::Generation(_) => ("server_error", None),
        };
        let param = match self {
            ApiError::InvalidValue { param, .. } => Some(*param),
            ApiError::UnknownModel(_) => Some("model"),
            ApiError::ContextLengthExceeded(_) => Some("messages"),
            _ => None,
        };
        json!({ "error": { "message": self.to_string(), "type": kind, "param": param, "code": code } })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), Json(self.body())).into_response();
        if matches!(self, ApiError::QueueFull(_)) {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

pub fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::InvalidValue { param, message: message.into() }
}
