//! `doppler`: the headless face of the DOPPLER engine.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "doppler", version, about = "Run local language models on DOPPLER's own GPU engine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List GPU adapters with their backend, driver, features and limits.
    Devices(commands::devices::DevicesArgs),
    /// Print the token ids of a text (no BOS, special tokens parsed).
    Tokenize(commands::tokenize::TokenizeArgs),
    /// Generate a reply to one prompt, streaming it to stdout.
    Run(commands::run::RunArgs),
    /// Chat interactively with a model.
    Chat(commands::chat::ChatArgs),
    /// Measure perplexity over a text file (llama.cpp's definition).
    Perplexity(commands::perplexity::PerplexityArgs),
    /// Manage installed models.
    Models(commands::models::ModelsArgs),
    /// Measure prefill and decode speed (llama-bench's method).
    Bench(commands::bench::BenchArgs),
    /// Print the logits after a prompt as JSON (for comparing adapters).
    Logits(commands::logits::LogitsArgs),
    /// Write a synthetic GGUF model with random weights in llama.cpp's Q4_K_M mix.
    Synth(commands::synth::SynthArgs),
    /// Serve a model over an OpenAI-compatible HTTP API.
    Serve(commands::serve::ServeArgs),
}

fn main() -> ExitCode {
    doppler_engine::tokenizer::sandbox_chat_templates();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DOPPLER_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices(args) => commands::devices::run(args),
        Command::Tokenize(args) => commands::tokenize::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Chat(args) => commands::chat::run(args),
        Command::Perplexity(args) => commands::perplexity::run(args),
        Command::Models(args) => commands::models::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Synth(args) => commands::synth::run(args),
        Command::Logits(args) => commands::logits::run(args),
        Command::Serve(args) => commands::serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One clear line: the chain of causes, no backtrace.
            let mut message = error.to_string();
            for cause in error.chain().skip(1) {
                let cause = cause.to_string();
                if !message.contains(&cause) {
                    message.push_str(": ");
                    message.push_str(&cause);
                }
            }
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
