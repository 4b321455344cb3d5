//! Starting the server: load the model on a fresh worker, bind, answer until Ctrl-C.

use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use doppler_engine::EngineOptions;
use doppler_runtime::{LoadFailure, LoadRequest};

use crate::{handlers::router, ServerState, Worker, DEFAULT_MAX_WAITING};

/// How long a running generation may take to stop once the server is asked to.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

pub struct ServeOptions {
    /// The name clients use for the model.
    pub model_name: String,
    pub model_path: PathBuf,
    pub context_len: Option<u32>,
    pub host: IpAddr,
    pub port: u16,
    pub api_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--host {0} is reachable from other machines: set --api-key too (or serve on 127.0.0.1)")]
    ExposedWithoutKey(IpAddr),
    #[error("--api-key is empty")]
    EmptyApiKey,
    #[error("loading {path}: {failure}")]
    Load { path: PathBuf, failure: LoadFailure },
    #[error("cannot listen on {address}: {source}")]
    Bind { address: SocketAddr, source: std::io::Error },
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

/// A host other than loopback needs a key: anyone who can reach the port could use the GPU.
pub fn check_host(host: IpAddr, api_key: Option<&str>) -> Result<(), ServeError> {
    match api_key {
        Some("") => Err(ServeError::EmptyApiKey),
        None if !host.is_loopback() => Err(ServeError::ExposedWithoutKey(host)),
        _ => Ok(()),
    }
}

/// Serves until Ctrl-C; `on_listening` hears the bound address (the port may have been 0).
pub fn run(options: ServeOptions, on_listening: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    check_host(options.host, options.api_key.as_deref())?;
    let worker = Arc::new(Worker::<String>::spawn(EngineOptions::default(), DEFAULT_MAX_WAITING));
    let load = LoadRequest {
        model_id: options.model_name.clone(),
        path: options.model_path.clone(),
        context_len: options.context_len,
    };
    let info = worker
        .load_and_wait(load)
        .map_err(|failure| ServeError::Load { path: options.model_path.clone(), failure })?;
    let state =
        Arc::new(ServerState::new(worker.clone(), options.model_name, info.context_len, options.api_key));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let served = runtime.block_on(async {
        let address = SocketAddr::new(options.host, options.port);
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| ServeError::Bind { address, source })?;
        on_listening(listener.local_addr()?);
        let ctrl_c = async {
            // Without a signal handler there is nothing to wait for but the process's end.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        serve(listener, router(state), ctrl_c).await?;
        Ok(())
    });
    worker.shutdown(SHUTDOWN_GRACE);
    served
}

/// Answers on `listener` until `shutdown` completes, then lets running requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_goes_without_a_key() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(check_host(loopback, None).is_ok());
        assert!(check_host("::1".parse().unwrap(), None).is_ok());
        assert!(matches!(check_host(any, None), Err(ServeError::ExposedWithoutKey(_))));
        assert!(check_host(any, Some("secret")).is_ok());
        assert!(matches!(check_host(loopback, Some("")), Err(ServeError::EmptyApiKey)));
    }
}
