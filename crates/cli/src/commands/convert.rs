//! `doppler models convert`: a GGUF file or a Hugging Face safetensors folder into the store
//! as an RDRR model, with a progress bar on stderr.

use std::{cell::RefCell, path::PathBuf};

use anyhow::Result;
use doppler_engine::store::{ByteSize, ModelStore};
use doppler_store::convert::{convert_into_store, ConvertProgress, ConvertRequest, TargetQuant};
use indicatif::ProgressBar;

use super::models::new_bar;

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// A `.gguf` file, or a Hugging Face model folder (config.json, *.safetensors,
    /// tokenizer.json, tokenizer_config.json).
    source: PathBuf,
    /// For a safetensors folder, the matrices' weight types: Q4_K_M (llama.cpp's mix of Q4_K
    /// and Q6_K; Q4_K is the same), Q6_K, Q8_0 (default) or F16.
    #[arg(long)]
    quant: Option<String>,
    /// The name to install it under (default: the source's name with `-rdrr`).
    #[arg(long)]
    name: Option<String>,
}

pub fn convert(store: &ModelStore, args: ConvertArgs) -> Result<()> {
    let quant = args.quant.as_deref().map(str::parse::<TargetQuant>).transpose()?;
    let request = ConvertRequest { source: args.source, quant, name: args.name };
    let bar: RefCell<Option<ProgressBar>> = RefCell::new(None);
    let mut on_progress = |progress: ConvertProgress| {
        let mut bar = bar.borrow_mut();
        let bar = bar.get_or_insert_with(|| new_bar("converting", progress.total_bytes));
        bar.set_position(progress.done_bytes);
    };
    let result = convert_into_store(store, &request, &mut on_progress);
    if let Some(bar) = bar.borrow_mut().take() {
        bar.finish_and_clear();
    }
    let model = result?;
    let size: u64 = model.manifest.files().iter().map(|file| file.size).sum();
    println!("converted {} ({}) at {}", model.name(), ByteSize(size), model.path.display());
    Ok(())
}
