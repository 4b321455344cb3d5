use std::path::PathBuf;

use anyhow::{Context, Result};

use super::model_loading::{load_with, ModelArgs};

#[derive(clap::Args)]
pub struct PerplexityArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The text file to score.
    #[arg(long, short)]
    file: PathBuf,
    /// Print a JSON object as well as the last `PPL = ` line.
    #[arg(long)]
    json: bool,
}

pub fn run(args: PerplexityArgs) -> Result<()> {
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let n_ctx = args.model.ctx.unwrap_or(512);
    let model = load_with(&args.model, Some(n_ctx), Some(n_ctx))?;
    let result =
        doppler_engine::evaluate::perplexity(&model, &text, n_ctx as usize, &mut |chunk, total, running| {
            eprintln!("[{}/{}] running PPL = {running:.4}", chunk + 1, total);
        })?;
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    }
    println!("PPL = {:.4}", result.perplexity);
    Ok(())
}
