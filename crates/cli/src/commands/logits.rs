//! `doppler logits`: the logits after a prompt, for comparing one model file across adapters.

use anyhow::Result;
use serde::Serialize;

use super::model_loading::{load, ModelArgs};

#[derive(clap::Args)]
pub struct LogitsArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The prompt, used as-is (BOS by the model's rule, special tokens parsed).
    #[arg(long, short)]
    prompt: String,
    /// How many of the highest logits to print.
    #[arg(long, default_value_t = 20)]
    top: usize,
}

#[derive(Serialize)]
struct LogitsReport {
    adapter: String,
    prompt_tokens: Vec<u32>,
    top: Vec<(u32, f32)>,
    /// Every logit, so two adapters can be compared element by element.
    logits: Vec<f32>,
}

pub fn run(args: LogitsArgs) -> Result<()> {
    let model = load(&args.model)?;
    let tokenizer = model.tokenizer();
    let prompt = tokenizer.encode(&args.prompt, tokenizer.add_bos())?;
    let mut session = model.new_session()?;
    let logits = session.logits_after(&prompt)?;
    let mut ranked: Vec<(u32, f32)> = logits.iter().enumerate().map(|(i, &l)| (i as u32, l)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked.truncate(args.top);
    let report = LogitsReport { adapter: model.gpu().describe(), prompt_tokens: prompt, top: ranked, logits };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
