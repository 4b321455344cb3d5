//! `doppler serve`: the model behind an OpenAI-compatible HTTP API.

use std::{net::IpAddr, path::Path};

use anyhow::Result;
use doppler_server::ServeOptions;

use super::model_loading::resolve_model_path;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// A GGUF file, or the name of an installed model (see `doppler models list`).
    #[arg(long, short)]
    model: String,
    /// Address to listen on; anything but loopback needs --api-key.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Clients must send `Authorization: Bearer <KEY>` (all routes but /health).
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Context length in tokens, the KV cache sized to it (default: the model's, capped at 8192).
    #[arg(long)]
    ctx: Option<u32>,
}

pub fn run(args: ServeArgs) -> Result<()> {
    // Checked before the model loads, so a refused host fails at once.
    doppler_server::check_host(args.host, args.api_key.as_deref())?;
    let model_path = resolve_model_path(&args.model)?;
    let options = ServeOptions {
        model_name: served_name(&args.model, &model_path),
        model_path,
        context_len: args.ctx,
        host: args.host,
        port: args.port,
        api_key: args.api_key,
    };
    let name = options.model_name.clone();
    doppler_server::run(options, |address| {
        eprintln!("serving {name} on http://{address}/v1 — Ctrl-C to stop");
    })?;
    Ok(())
}

/// An installed model keeps its name; a file is known by its stem.
fn served_name(model: &str, path: &Path) -> String {
    if Path::new(model).is_file() {
        path.file_stem().map_or_else(|| model.to_string(), |stem| stem.to_string_lossy().into_owned())
    } else {
        model.to_string()
    }
}
