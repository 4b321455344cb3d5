//! `doppler models convert`: a GGUF file, or a Hugging Face safetensors folder or Hub
//! repository, into the store as an RDRR model, with progress bars on stderr.

use std::cell::RefCell;

use anyhow::Result;
use doppler_engine::store::{ByteSize, ModelStore};
use doppler_store::{
    convert::{
        convert_into_store, convert_repo_into_store, ConvertError, ConvertEvent, ConvertProgress,
        ConvertRequest, ConvertSource, TargetQuant,
    },
    download::{CancelToken, RetryPolicy},
};
use indicatif::ProgressBar;

use super::{
    models::new_bar,
    models_hub::{client, PullDisplay},
};

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// A `.gguf` file; a Hugging Face model folder (config.json, *.safetensors, tokenizer.json,
    /// tokenizer_config.json); or a Hub repository `owner/name[@revision]` holding one, whose
    /// files are downloaded first (HF_ENDPOINT, HF_TOKEN; an interrupted download resumes).
    source: String,
    /// For a safetensors folder, the matrices' weight types: Q4_K_M (llama.cpp's mix of Q4_K
    /// and Q6_K; Q4_K is the same), Q6_K, Q8_0 (default) or F16.
    #[arg(long)]
    quant: Option<String>,
    /// The name to install it under (default: the source's name with `-rdrr`).
    #[arg(long)]
    name: Option<String>,
}

pub fn convert(store: &ModelStore, args: ConvertArgs) -> Result<()> {
    let quant = args.quant.as_deref().map(str::parse::<TargetQuant>).transpose()?;
    let bar: RefCell<Option<ProgressBar>> = RefCell::new(None);
    let mut on_progress = |progress: ConvertProgress| {
        let mut bar = bar.borrow_mut();
        let bar = bar.get_or_insert_with(|| new_bar("converting", progress.total_bytes));
        bar.set_position(progress.done_bytes);
    };
    let result = match ConvertSource::parse(&args.source) {
        ConvertSource::Local(source) => {
            let request = ConvertRequest { source, quant, name: args.name };
            convert_into_store(store, &request, &mut on_progress).map_err(anyhow::Error::from)
        }
        ConvertSource::Hub(source) => {
            let downloads = PullDisplay::default();
            let mut on_event = |event: ConvertEvent| match event {
                ConvertEvent::Download(event) => downloads.show(event),
                ConvertEvent::Convert(progress) => {
                    downloads.finish();
                    on_progress(progress)
                }
            };
            let (policy, cancel) = (RetryPolicy::default(), CancelToken::new());
            let result = convert_repo_into_store(
                &client()?,
                store,
                &source,
                quant,
                args.name,
                &policy,
                &cancel,
                &mut on_event,
            );
            downloads.abandon();
            result.map_err(|error| match error {
                // The repository could not be listed: a mistyped local path reads as a
                // repository id too.
                ConvertError::Hub(_) => anyhow::Error::new(error).context(format!(
                    "{} is no file or folder here, so it was looked up as a Hub repository",
                    args.source
                )),
                error => error.into(),
            })
        }
    };
    if let Some(bar) = bar.borrow_mut().take() {
        bar.finish_and_clear();
    }
    let model = result?;
    let size: u64 = model.manifest.files().iter().map(|file| file.size).sum();
    println!("converted {} ({}) at {}", model.name(), ByteSize(size), model.path.display());
    Ok(())
}
