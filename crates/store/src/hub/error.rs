/// Why a request to the Hub failed. Each error names what was asked for.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(
        "invalid Hub endpoint '{endpoint}' (set {} to an http or https URL): {reason}",
        super::ENDPOINT_ENV
    )]
    BadEndpoint { endpoint: String, reason: String },
    #[error("invalid repository id '{repo}': expected owner/name of letters, digits, '.', '_' and '-'")]
    BadRepoId { repo: String },
    #[error("invalid {what} '{value}': {reason}")]
    BadPath { what: &'static str, value: String, reason: &'static str },
    #[error("could not create the HTTP client: {source}")]
    Client {
        #[source]
        source: reqwest::Error,
    },
    #[error("cannot reach {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{repo} needs access (HTTP {status}): it is gated or private, or does not exist; accept its license at {page} while signed in, then set {} to an access token from https://huggingface.co/settings/tokens", super::TOKEN_ENV)]
    Gated { repo: String, status: u16, page: String },
    #[error("{what} was not found on {endpoint} (HTTP 404)")]
    NotFound { what: String, endpoint: String },
    #[error("reading the answer of {url}: {source}")]
    Interrupted {
        url: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{url} cannot serve bytes from {offset} on (HTTP 416)")]
    RangeNotSatisfiable { url: String, offset: u64 },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} sent an unusable answer: {reason}")]
    BadResponse { url: String, reason: String },
    #[error("{url} redirected more than {limit} times")]
    TooManyRedirects { url: String, limit: usize },
}

impl HubError {
    /// Whether trying again later may succeed: the network or the server, not the request.
    pub fn is_transient(&self) -> bool {
        match self {
            HubError::Unreachable { .. } | HubError::Interrupted { .. } => true,
            HubError::Status { status, .. } => *status >= 500 || matches!(status, 408 | 429),
            _ => false,
        }
    }
}
