//! Resolving `--model` (a path or an installed model's name) and loading it with progress on stderr.

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, Result};
use doppler_engine::{store::ModelStore, Engine, EngineOptions, LoadOptions, LoadedModel, ModelFile};

#[derive(clap::Args, Clone)]
pub struct ModelArgs {
    /// A GGUF file, or the name of an installed model (see `doppler models list`).
    #[arg(long, short)]
    pub model: String,
    /// Context length in tokens, the KV cache sized to it (default: the model's, capped at 8192).
    #[arg(long)]
    pub ctx: Option<u32>,
    /// GPU memory the model may take, e.g. `6GiB` (default: the adapter's budget, see `doppler devices`).
    #[arg(long, value_name = "BYTES")]
    pub gpu_memory: Option<bytesize::ByteSize>,
}

pub fn resolve_model_path(name_or_path: &str) -> Result<PathBuf> {
    let as_path = PathBuf::from(name_or_path);
    if as_path.is_file() {
        return Ok(as_path);
    }
    let store = ModelStore::default_location().context("opening the model store")?;
    Ok(store.resolve(name_or_path)?)
}

pub fn load(args: &ModelArgs) -> Result<Arc<LoadedModel>> {
    load_with(args, args.ctx, None)
}

/// Loads with an explicit context length and prefill batch size.
pub fn load_with(
    args: &ModelArgs,
    context_len: Option<u32>,
    max_batch: Option<u32>,
) -> Result<Arc<LoadedModel>> {
    let path = resolve_model_path(&args.model)?;
    let loading = || format!("loading {}", path.display());
    // The file is checked before the GPU is opened, so a bad file is refused at once.
    let file = ModelFile::open(&path).with_context(loading)?;
    file.context_len(context_len)?;
    let engine = Engine::new(EngineOptions::default())?;
    let options = LoadOptions {
        context_len,
        max_batch,
        memory_budget: args.gpu_memory.map(|bytes| bytes.as_u64()),
        ..LoadOptions::default()
    };
    let model = engine.load_checked(file, options, &mut |_| {}).with_context(loading)?;
    tracing::info!(model = %model.info().name, gpu = %engine.gpu().describe(), "model loaded");
    Ok(model)
}
