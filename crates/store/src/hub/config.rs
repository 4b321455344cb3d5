use std::time::Duration;

/// The environment variable naming the Hub's address (a mirror or a stand-in), as in
/// `huggingface_hub`.
pub const ENDPOINT_ENV: &str = "HF_ENDPOINT";
/// The environment variable holding an access token for gated and private repositories.
pub const TOKEN_ENV: &str = "HF_TOKEN";
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Where the Hub is and how to talk to it.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// Without a trailing slash.
    pub endpoint: String,
    pub token: Option<String>,
    /// How long a request may wait for its answer, or a download for its next byte, before
    /// it counts as stalled.
    pub stall_timeout: Duration,
}

impl HubConfig {
    pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(30);

    pub fn new(endpoint: &str) -> HubConfig {
        HubConfig {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token: None,
            stall_timeout: HubConfig::DEFAULT_STALL_TIMEOUT,
        }
    }

    /// `HF_ENDPOINT` (else the public Hub) and `HF_TOKEN`; empty values count as unset.
    pub fn from_env() -> HubConfig {
        let var = |name| {
            std::env::var(name).ok().map(|value| value.trim().to_string()).filter(|value| !value.is_empty())
        };
        let mut config = HubConfig::new(&var(ENDPOINT_ENV).unwrap_or_else(|| DEFAULT_ENDPOINT.to_string()));
        config.token = var(TOKEN_ENV);
        config
    }
}
