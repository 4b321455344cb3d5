use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::core::{backends::KeyStoreError, storage::StorageError};

/// Whether and where the app serves its model, stored apart from the app's other settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerSettings {
    /// Off until the user turns it on.
    pub enabled: bool,
    /// Loopback unless the user says otherwise; another host needs an API key.
    pub host: String,
    pub port: u16,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings { enabled: false, host: "127.0.0.1".to_string(), port: 8080 }
    }
}

/// What the settings show: the settings, whether a key is set (never the key), and the
/// server's URL while it runs, or why it does not.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub settings: ServerSettings,
    pub has_api_key: bool,
    /// `http://host:port/v1`, the base URL OpenAI clients take.
    pub url: Option<String>,
    /// The model it serves.
    pub model_id: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    KeyStore(#[from] KeyStoreError),
    #[error("'{0}' is not an IP address (127.0.0.1 keeps the server to this computer)")]
    BadHost(String),
    #[error("{0} is reachable from other machines: set an API key first (or serve on 127.0.0.1)")]
    ExposedWithoutKey(std::net::IpAddr),
    #[error("{0}")]
    Refused(#[from] doppler_server::ServeError),
    #[error("no model is loaded: the server starts once one is")]
    NoModel,
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}
