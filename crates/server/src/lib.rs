//! An OpenAI-compatible HTTP server over DOPPLER's runtime: `/v1/models`,
//! `/v1/chat/completions`, `/v1/completions` (whole or streamed as server-sent events),
//! `/health` and `/metrics`, errors in OpenAI's shape. Requests queue first in, first out on
//! the runtime's bounded queue; a request whose client goes away is cancelled.

mod api_error;
mod completion;
mod generation;
mod handlers;
mod metrics;
mod serve;
mod wire_request;

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

pub use api_error::ApiError;
pub use generation::Worker;
pub use handlers::router;
pub use metrics::Metrics;
pub use serve::{check_host, run, serve, ServeError, ServeOptions};

/// Requests may wait behind the running one at most; more get 429.
pub const DEFAULT_MAX_WAITING: usize = 16;

/// Request bodies are refused above this many bytes (413): far above any prompt a context holds.
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// How the worker keys the server's generations, made from each request's OpenAI id: the id
/// itself on `doppler serve`'s own worker; a worker the server shares (the app's) has keys of
/// its own that can name a request.
pub trait RequestKey: From<String> + Clone + Send + Sync + 'static {}

impl<K: From<String> + Clone + Send + Sync + 'static> RequestKey for K {}

/// What the handlers share.
pub struct ServerState<K = String> {
    pub worker: Arc<Worker<K>>,
    /// The served model's name, in `/v1/models` and the `model` field of requests.
    pub model_id: String,
    /// The longest a generation may be when a request sets no `max_tokens`.
    pub context_len: u32,
    /// `None`: no key asked (loopback only).
    pub api_key: Option<String>,
    pub body_limit: usize,
    pub metrics: Arc<Metrics>,
    /// When the server started (`created` of the model).
    pub started: u64,
    next_request: AtomicU64,
}

impl<K> ServerState<K> {
    pub fn new(
        worker: Arc<Worker<K>>,
        model_id: String,
        context_len: u32,
        api_key: Option<String>,
    ) -> ServerState<K> {
        ServerState {
            worker,
            model_id,
            context_len,
            api_key,
            body_limit: DEFAULT_BODY_LIMIT,
            metrics: Arc::new(Metrics::default()),
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            next_request: AtomicU64::new(1),
        }
    }

    fn next_request_number(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::Relaxed)
    }
}
