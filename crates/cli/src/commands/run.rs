use std::io::Write;

use anyhow::Result;
use doppler_engine::{CancelToken, ChatMessage, Role};

use super::{
    model_loading::{load, ModelArgs},
    sampling_args::SamplingArgs,
};

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The prompt.
    #[arg(long, short)]
    prompt: String,
    /// Use the prompt as-is (BOS by the model's rule, special tokens parsed) instead of the chat template.
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Print one JSON object {"tokens": [...], "text": "..."} instead of streaming text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: RunArgs) -> Result<()> {
    let model = load(&args.model)?;
    let mut session = model.new_session()?;
    let options = args.sampling.options();
    let cancel = CancelToken::new();
    let stdout = std::io::stdout();
    let mut stream = |event: doppler_engine::TokenEvent| {
        if !args.json {
            let mut out = stdout.lock();
            let _ = out.write_all(event.text.as_bytes());
            let _ = out.flush();
        }
    };
    let summary = if args.raw {
        let tokenizer = model.tokenizer();
        let prompt = tokenizer.encode(&args.prompt, tokenizer.add_bos())?;
        session.generate(&prompt, &options, &cancel, &mut stream)?
    } else {
        let messages = [ChatMessage { role: Role::User, content: args.prompt.clone() }];
        session.generate_chat(&messages, &options, &cancel, &mut stream)?
    };
    if args.json {
        println!("{}", serde_json::json!({ "tokens": summary.tokens, "text": summary.text }));
    } else {
        println!();
        tracing::info!(
            tokens = summary.generated_tokens,
            tokens_per_second = summary.tokens_per_second,
            ttft_ms = summary.time_to_first_token_ms,
            "done"
        );
    }
    Ok(())
}
