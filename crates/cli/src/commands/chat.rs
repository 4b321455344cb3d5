use std::io::{BufRead, Write};

use anyhow::Result;
use doppler_engine::{CancelToken, ChatMessage, Role};

use super::{
    model_loading::{load, ModelArgs},
    sampling_args::SamplingArgs,
};

#[derive(clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A system prompt for the conversation.
    #[arg(long)]
    system: Option<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
}

pub fn run(args: ChatArgs) -> Result<()> {
    let model = load(&args.model)?;
    let mut session = model.new_session()?;
    let options = args.sampling.options();
    let mut messages: Vec<ChatMessage> =
        args.system.iter().map(|s| ChatMessage { role: Role::System, content: s.clone() }).collect();
    eprintln!("{} ready — type a message, /reset to start over, Ctrl-D to quit.", model.info().name);
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        eprint!("> ");
        std::io::stderr().flush()?;
        let Some(line) = lines.next() else { break };
        let line = line?;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/reset" {
            messages.retain(|m| m.role == Role::System);
            session.reset();
            continue;
        }
        messages.push(ChatMessage { role: Role::User, content: text.to_string() });
        let stdout = std::io::stdout();
        let summary = session.generate_chat(&messages, &options, &CancelToken::new(), &mut |event| {
            let mut out = stdout.lock();
            let _ = out.write_all(event.text.as_bytes());
            let _ = out.flush();
        })?;
        println!();
        eprintln!(
            "[{} tokens, {:.1} tok/s, {:?}]",
            summary.generated_tokens, summary.tokens_per_second, summary.stop_reason
        );
        messages.push(ChatMessage { role: Role::Assistant, content: summary.text });
    }
    Ok(())
}
