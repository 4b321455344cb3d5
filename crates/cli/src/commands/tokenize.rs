use anyhow::Result;
use doppler_engine::{gguf::GgufFile, tokenizer::Tokenizer};

use super::model_loading::resolve_model_path;

#[derive(clap::Args)]
pub struct TokenizeArgs {
    /// A GGUF file or an installed model's name.
    #[arg(long, short)]
    model: String,
    /// The text to tokenize.
    #[arg(long, short)]
    text: String,
    /// Print a JSON array.
    #[arg(long)]
    json: bool,
}

pub fn run(args: TokenizeArgs) -> Result<()> {
    // Tokenizing needs only the GGUF metadata: no GPU.
    let gguf = GgufFile::open(&resolve_model_path(&args.model)?)?;
    let tokenizer = Tokenizer::from_gguf(&gguf)?;
    let ids = tokenizer.encode(&args.text, false)?;
    if args.json {
        println!("{}", serde_json::to_string(&ids)?);
    } else {
        println!("{}", ids.iter().map(u32::to_string).collect::<Vec<_>>().join(" "));
    }
    Ok(())
}
