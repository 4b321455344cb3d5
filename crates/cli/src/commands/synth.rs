use std::path::PathBuf;

use anyhow::{Context, Result};
use doppler_engine::{
    gguf::GgufFile,
    synth::{write_synthetic, SynthShape},
};

use super::model_loading::resolve_model_path;

#[derive(clap::Args)]
pub struct SynthArgs {
    /// gemma3 or llama.
    #[arg(long, default_value = "gemma3")]
    arch: String,
    /// gemma3: 270m, 1b, 4b; llama: llama3.2-1b, qwen2.5-1.5b.
    #[arg(long)]
    size: String,
    /// The GGUF file to write.
    #[arg(long)]
    out: PathBuf,
    /// The model whose tokenizer the synthetic model gets (default: gemma-3-270m for gemma3, smollm2-135m-instruct for llama).
    #[arg(long)]
    tokenizer_from: Option<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: SynthArgs) -> Result<()> {
    let shape = SynthShape::named(&args.arch, &args.size)?;
    let donor_name = args.tokenizer_from.clone().unwrap_or_else(|| {
        if shape.arch == "gemma3" {
            "gemma-3-270m".into()
        } else {
            "smollm2-135m-instruct".into()
        }
    });
    let donor = GgufFile::open(&resolve_model_path(&donor_name)?)
        .with_context(|| format!("opening tokenizer donor {donor_name}"))?;
    let bytes = write_synthetic(&shape, &donor, &args.out, args.seed)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("wrote {} ({} {}, {} MiB)", args.out.display(), shape.arch, shape.label, bytes >> 20);
    Ok(())
}
