//! `doppler models search | files | pull`: GGUF models (and safetensors models to convert)
//! from the Hugging Face Hub (`HF_ENDPOINT`, `HF_TOKEN`).

use std::cell::RefCell;

use anyhow::{Context, Result};
use doppler_engine::store::{ByteSize, ModelStore};
use doppler_store::{
    download::{CancelToken, RetryPolicy},
    hub::{HubClient, HubConfig},
    pull,
    quant::{assess_choices, gguf_choices, Fit, PlannedSession},
    PullEvent, PullOutcome, PullRequest, Selection,
};
use indicatif::{ProgressBar, ProgressStyle};

pub(super) fn client() -> Result<HubClient> {
    HubClient::new(HubConfig::from_env()).context("setting up the Hugging Face Hub client")
}

pub fn search(query: &str, limit: usize, json: bool) -> Result<()> {
    let models = client()?.search(query, limit)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&models)?);
        return Ok(());
    }
    if models.is_empty() {
        eprintln!("no GGUF or safetensors models match '{query}'");
    }
    for model in &models {
        let formats: Vec<&str> = model.formats.iter().map(|format| format.tag()).collect();
        let downloads =
            model.downloads.map_or_else(String::new, |downloads| format!("{downloads} downloads"));
        println!("{:<60}  {:<16}  {downloads}", model.id, formats.join(","));
    }
    Ok(())
}

pub fn files(repo: &str, revision: &str, budget: Option<u64>, json: bool) -> Result<()> {
    let files = client()?.list_files(repo, revision)?;
    let listed = assess_choices(gguf_choices(&files), budget, &PlannedSession::default());
    if json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    if listed.is_empty() {
        eprintln!("{repo} has no GGUF model files");
        return Ok(());
    }
    let label_width = listed.iter().map(|entry| entry.choice.label().len()).max().unwrap_or(0).max(5);
    println!("{:<label_width$}  {:>9}  {:>9}  {:<8}  FILES", "QUANT", "SIZE", "NEEDS", "FIT");
    for entry in &listed {
        let fit = entry.fit.map_or("-", Fit::as_str);
        let marker = if entry.recommended { " (recommended)" } else { "" };
        let names: Vec<&str> = entry.choice.files.iter().map(|file| file.path.as_str()).collect();
        println!(
            "{:<label_width$}  {:>9}  {:>9}  {fit:<8}  {}{marker}",
            entry.choice.label(),
            ByteSize(entry.choice.size).to_string(),
            ByteSize(entry.footprint.total()).to_string(),
            names.join(" ")
        );
    }
    Ok(())
}

pub struct PullArgs {
    pub repo: String,
    pub revision: String,
    pub file: Option<String>,
    pub quant: Option<String>,
    pub name: Option<String>,
}

/// Progress on stderr (a bar on a terminal); the installed model on stdout.
pub fn pull_model(store: &ModelStore, args: PullArgs) -> Result<()> {
    let selection = match (args.file, args.quant) {
        (Some(file), _) => Selection::File(file),
        (None, Some(quant)) => Selection::Quant(quant),
        (None, None) => Selection::Only,
    };
    let request = PullRequest { repo: args.repo, revision: args.revision, selection, name: args.name };
    let display = PullDisplay::default();
    let result =
        pull(&client()?, store, &request, &RetryPolicy::default(), &CancelToken::new(), &mut |event| {
            display.show(event)
        });
    display.abandon();
    let outcome = result?;
    let model = outcome.model();
    let verb = match outcome {
        PullOutcome::Installed(_) => "installed",
        PullOutcome::AlreadyInstalled(_) => "already installed:",
    };
    println!("{verb} {} ({}) at {}", model.name(), ByteSize(model.manifest.size), model.path.display());
    Ok(())
}

/// A pull's progress on stderr: a line per step, a bar while bytes arrive (on a terminal).
#[derive(Default)]
pub(super) struct PullDisplay {
    bar: RefCell<Option<ProgressBar>>,
}

impl PullDisplay {
    pub(super) fn say(&self, line: String) {
        match self.bar.borrow().as_ref() {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    pub(super) fn show(&self, event: PullEvent) {
        match event {
            PullEvent::Chosen { name, files, total } => {
                self.say(format!("{name}: {} ({})", files.join(", "), ByteSize(total)));
                *self.bar.borrow_mut() = Some(new_bar(&name, total));
            }
            PullEvent::Resumed { file, from } => {
                self.say(format!("{file}: resuming after {}", ByteSize(from)))
            }
            PullEvent::Progress { done, .. } => {
                if let Some(bar) = self.bar.borrow().as_ref() {
                    bar.set_position(done);
                }
            }
            PullEvent::Retrying { file, attempt, wait, reason } => {
                self.say(format!("{file}: {reason}; retry {attempt} in {:.1} s", wait.as_secs_f64()))
            }
            PullEvent::Installing { name } => {
                self.finish();
                self.say(format!("{name}: installing"));
            }
        }
    }

    /// Clears a finished bar.
    pub(super) fn finish(&self) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }

    /// Leaves an unfinished bar where it stopped.
    pub(super) fn abandon(&self) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.abandon();
        }
    }
}

fn new_bar(name: &str, total: u64) -> ProgressBar {
    let style = ProgressStyle::with_template(
        "{prefix}: [{wide_bar}] {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} ETA {eta}",
    )
    .expect("a valid progress template")
    .progress_chars("=> ");
    ProgressBar::new(total).with_style(style).with_prefix(name.to_string())
}
