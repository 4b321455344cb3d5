use std::path::PathBuf;

use anyhow::{Context, Result};
use doppler_engine::{
    gguf::GgufFile,
    synth::{write_synthetic, SynthShape, SynthWeights},
};

use super::model_loading::resolve_model_path;

#[derive(clap::Args)]
pub struct SynthArgs {
    /// gemma3, llama, qwen2, qwen3 or phi3.
    #[arg(long, default_value = "gemma3")]
    arch: String,
    /// gemma3: 270m, 1b, 4b, 12b, 27b; llama: smollm2-135m, llama3.2-1b, llama3.2-3b, llama3.1-8b,
    /// llama3.1-70b, mistral-7b; qwen2: qwen2.5-1.5b, qwen2.5-7b; qwen3: qwen3-4b; phi3: phi3.5-mini.
    #[arg(long)]
    size: String,
    /// The GGUF file to write.
    #[arg(long)]
    out: PathBuf,
    /// The model whose tokenizer the synthetic model gets (default: gemma-3-270m for gemma3, smollm2-135m-instruct for the others; its vocabulary is padded to the shape's).
    #[arg(long)]
    tokenizer_from: Option<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The layer matrices' weights: llama.cpp's Q4_K_M mix, or one type for all of them (e.g. Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4, Q8_0), as `llama-quantize --pure`.
    #[arg(long, default_value = "Q4_K_M")]
    weights: String,
}

pub fn run(args: SynthArgs) -> Result<()> {
    let shape = SynthShape::named(&args.arch, &args.size)?;
    let weights = SynthWeights::parse(&args.weights)?;
    let donor_name = args.tokenizer_from.clone().unwrap_or_else(|| {
        if shape.arch == "gemma3" {
            "gemma-3-270m".into()
        } else {
            "smollm2-135m-instruct".into()
        }
    });
    let donor = GgufFile::open(&resolve_model_path(&donor_name)?)
        .with_context(|| format!("opening tokenizer donor {donor_name}"))?;
    let bytes = write_synthetic(&shape, &donor, &args.out, args.seed, weights)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("wrote {} ({} {}, {} MiB)", args.out.display(), shape.arch, shape.label, bytes >> 20);
    Ok(())
}
