//! `pull`: a repository's GGUF model, chosen by file or quantization, downloaded (resuming
//! what an earlier run left) and installed into the model store as one model.

mod error;

use std::{path::Path, time::Duration};

use doppler_engine::store::{
    check_model_name, ensure_free_space, model_name_from_file, InstalledModel, ModelStore, StoreError,
    VerifiedFile,
};

pub use error::PullError;

use crate::{
    download::{
        download_file, part_path, state_path, CancelToken, DownloadError, RateMeter, RemoteFile, RetryPolicy,
        TransferEvent,
    },
    hub::HubClient,
    quant::{gguf_choices, GgufChoice},
};

/// Which of a repository's GGUF models to pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The repository's only one.
    Only,
    /// The model this file is (a part of).
    File(String),
    /// The one with this quantization label (any case).
    Quant(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub repo: String,
    pub revision: String,
    pub selection: Selection,
    /// The installed name (default: made from the file name).
    pub name: Option<String>,
}

/// What a pull is doing, for progress display.
#[derive(Debug, Clone, PartialEq)]
pub enum PullEvent {
    Chosen {
        name: String,
        files: Vec<String>,
        total: u64,
    },
    Resumed {
        file: String,
        from: u64,
    },
    /// Bytes of all the model's files on disk, of `total`.
    Progress {
        done: u64,
        total: u64,
        bytes_per_second: f64,
        eta: Option<Duration>,
    },
    Retrying {
        file: String,
        attempt: u32,
        wait: Duration,
        reason: String,
    },
    Installing {
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullOutcome {
    Installed(InstalledModel),
    /// A model of that name with the same file was installed already.
    AlreadyInstalled(InstalledModel),
}

impl PullOutcome {
    pub fn model(&self) -> &InstalledModel {
        match self {
            PullOutcome::Installed(model) | PullOutcome::AlreadyInstalled(model) => model,
        }
    }
}

/// Pulls `request` into `store`. Nothing is installed unless every file arrived whole with
/// the Hub's sha256; a pull that fails or is cancelled leaves its partial files for the next
/// pull of the same files to resume.
pub fn pull(
    client: &HubClient,
    store: &ModelStore,
    request: &PullRequest,
    policy: &RetryPolicy,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(PullEvent),
) -> Result<PullOutcome, PullError> {
    let files = client.list_files(&request.repo, &request.revision)?;
    let choice = choose(&request.repo, gguf_choices(&files), &request.selection)?;
    let name = match &request.name {
        Some(name) => name.clone(),
        None => {
            let file_name = choice.name.rsplit('/').next().unwrap_or(&choice.name);
            model_name_from_file(file_name).ok_or_else(|| PullError::NoName { file: choice.name.clone() })?
        }
    };
    check_model_name(&name)?;
    if let Some(installed) = store.get(&name)? {
        if choice.files[0].sha256.as_ref() == Some(&installed.manifest.sha256) {
            return Ok(PullOutcome::AlreadyInstalled(installed));
        }
        // Refused before the download rather than after it.
        return Err(StoreError::AlreadyInstalled { name, path: installed.dir }.into());
    }
    let remotes: Vec<RemoteFile> = choice
        .files
        .iter()
        .map(|file| RemoteFile {
            repo: request.repo.clone(),
            revision: request.revision.clone(),
            file: file.clone(),
        })
        .collect();
    let dir = store.downloads_dir();
    ensure_free_space(&dir, bytes_to_fetch(&dir, &remotes))?;
    on_event(PullEvent::Chosen {
        name: name.clone(),
        files: choice.files.iter().map(|file| file.path.clone()).collect(),
        total: choice.size,
    });
    let verified = download_all(client, &remotes, &dir, policy, cancel, on_event)?;
    on_event(PullEvent::Installing { name: name.clone() });
    let source = format!("hf:{}@{}/{}", request.repo, request.revision, choice.files[0].path);
    let installed = store.install_verified(&name, &verified, source)?;
    for file in &verified {
        // The part file moved into the store; its state is all that is left.
        let _ = std::fs::remove_file(state_path(&file.path));
    }
    Ok(PullOutcome::Installed(installed))
}

/// The bytes of `remotes` not yet in their part files in `dir`.
pub(crate) fn bytes_to_fetch(dir: &Path, remotes: &[RemoteFile]) -> u64 {
    let on_disk =
        |remote: &RemoteFile| std::fs::metadata(part_path(dir, remote)).map_or(0, |metadata| metadata.len());
    remotes.iter().map(|remote| remote.file.size.saturating_sub(on_disk(remote))).sum()
}

/// Downloads `remotes` into `dir` one after another, each resuming what an earlier run left,
/// with progress over them all; the finished files stay in `dir`.
pub(crate) fn download_all(
    client: &HubClient,
    remotes: &[RemoteFile],
    dir: &Path,
    policy: &RetryPolicy,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(PullEvent),
) -> Result<Vec<VerifiedFile>, DownloadError> {
    let total: u64 = remotes.iter().map(|remote| remote.file.size).sum();
    let mut meter = RateMeter::new();
    let mut finished_bytes = 0u64;
    let mut verified = Vec::with_capacity(remotes.len());
    for remote in remotes {
        let mut on_transfer = |event: TransferEvent| match event {
            TransferEvent::Resumed { file, from } => on_event(PullEvent::Resumed { file, from }),
            TransferEvent::Received { received, done, .. } => {
                meter.add(received);
                let done = finished_bytes + done;
                on_event(PullEvent::Progress {
                    done,
                    total,
                    bytes_per_second: meter.bytes_per_second(),
                    eta: meter.eta(total.saturating_sub(done)),
                });
            }
            TransferEvent::Restarted { .. } => {}
            TransferEvent::Retrying { file, attempt, wait, reason } => {
                on_event(PullEvent::Retrying { file, attempt, wait, reason })
            }
        };
        verified.push(download_file(client, remote, dir, policy, cancel, &mut on_transfer)?);
        finished_bytes += remote.file.size;
    }
    Ok(verified)
}

fn choose(repo: &str, choices: Vec<GgufChoice>, selection: &Selection) -> Result<GgufChoice, PullError> {
    let labels = || choices.iter().map(|choice| choice.label().to_string()).collect::<Vec<_>>();
    if choices.is_empty() {
        return Err(PullError::NoGguf { repo: repo.to_string() });
    }
    match selection {
        Selection::Only if choices.len() == 1 => Ok(choices.into_iter().next().expect("one choice")),
        Selection::Only => Err(PullError::ChooseOne { repo: repo.to_string(), available: labels() }),
        Selection::File(file) => {
            let available =
                choices.iter().flat_map(|choice| &choice.files).map(|file| file.path.clone()).collect();
            choices
                .into_iter()
                .find(|choice| choice.files.iter().any(|part| part.path == *file || part.file_name() == file))
                .ok_or_else(|| PullError::NoSuchFile {
                    repo: repo.to_string(),
                    file: file.clone(),
                    available,
                })
        }
        Selection::Quant(quant) => {
            let available = labels();
            let mut matching: Vec<GgufChoice> = choices
                .into_iter()
                .filter(|choice| {
                    choice.quantization.as_deref().is_some_and(|label| label.eq_ignore_ascii_case(quant))
                })
                .collect();
            match matching.len() {
                0 => Err(PullError::NoSuchQuant { repo: repo.to_string(), quant: quant.clone(), available }),
                1 => Ok(matching.remove(0)),
                _ => Err(PullError::AmbiguousQuant {
                    repo: repo.to_string(),
                    quant: quant.clone(),
                    files: matching.into_iter().map(|choice| choice.name).collect(),
                }),
            }
        }
    }
}
