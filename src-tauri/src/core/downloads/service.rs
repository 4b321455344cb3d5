use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard, OnceLock},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use doppler_engine::{gpu::GpuOptions, store::ModelStore};
use doppler_store::{
    convert::is_convertible,
    download::{part_path, state_path, CancelToken, DownloadError, RemoteFile, RetryPolicy},
    hub::{HubClient, HubConfig, HubError, HubModel},
    pull,
    quant::{assess_choices, gguf_choices, PlannedSession},
    PullError, PullEvent, PullOutcome, PullRequest, Selection,
};

use super::{
    curated_for,
    models::{DownloadFile, MachineMemory},
    Download, DownloadStatus, Recommendation, RepoView, SavedList,
};

/// Search results a query shows.
const SEARCH_LIMIT: usize = 30;
/// Progress reaches the UI at most this often (a fast link brings thousands of chunks a second).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);
/// How long the recommendations wait for the Hub: offline, the first-run screen must not hang.
const RECOMMENDATION_TIMEOUT: Duration = Duration::from_secs(5);
const REVISION: &str = "main";

/// The adapter's memory, looked up once when a fit badge first needs it (enumerating the
/// adapters takes a moment).
pub type MemoryProbe = Box<dyn Fn() -> MachineMemory + Send + Sync>;

type Sink = Box<dyn Fn(&Download) + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum DownloadsError {
    #[error("the model store is unavailable: {0}")]
    StoreUnavailable(String),
    #[error(transparent)]
    Hub(#[from] HubError),
    #[error("{repo} has no GGUF model '{choice}'")]
    NoSuchChoice { repo: String, choice: String },
    #[error("there is no download {0}")]
    NoSuchDownload(u64),
    #[error("the download of {0} is not paused or failed")]
    NotResumable(String),
}

/// The downloads list and the threads that work on it.
struct Downloads {
    entries: Vec<Download>,
    /// The thread of each download that has one, with the token that stops it.
    threads: HashMap<u64, (CancelToken, JoinHandle<()>)>,
}

/// Searches the Hub, assesses repositories for this machine, and runs downloads into the
/// model store: one thread per download, the list kept in a JSON file so that downloads that
/// were running when the app ended resume (from their `.part` files) when it starts again.
pub struct DownloadService {
    hub: HubConfig,
    store: Result<ModelStore, String>,
    list: SavedList,
    policy: RetryPolicy,
    memory_probe: MemoryProbe,
    memory: OnceLock<MachineMemory>,
    downloads: Mutex<Downloads>,
    sink: Mutex<Option<Sink>>,
}

impl DownloadService {
    /// Reads the list a previous run left at `list_path`; call `resume_interrupted` to go on
    /// with the downloads it was running.
    pub fn new(
        hub: HubConfig,
        store: Result<ModelStore, String>,
        list_path: PathBuf,
        policy: RetryPolicy,
        memory_probe: MemoryProbe,
    ) -> Arc<DownloadService> {
        let list = SavedList::new(list_path);
        let entries = list.read();
        Arc::new(DownloadService {
            hub,
            store,
            list,
            policy,
            memory_probe,
            memory: OnceLock::new(),
            downloads: Mutex::new(Downloads { entries, threads: HashMap::new() }),
            sink: Mutex::new(None),
        })
    }

    /// Restarts the downloads the last run left running (it quit or was killed mid-download).
    pub fn resume_interrupted(self: &Arc<Self>) {
        let mut downloads = self.lock();
        let interrupted: Vec<u64> = downloads
            .entries
            .iter()
            .filter(|download| download.status.is_active())
            .map(|download| download.id)
            .collect();
        for id in interrupted {
            self.spawn(&mut downloads, id);
        }
    }

    /// Where every change of a download goes (the webview's channel); replaces the last one.
    pub fn watch(&self, sink: Sink) -> Vec<Download> {
        *self.sink.lock().expect("the sink lock is never poisoned") = Some(sink);
        self.list()
    }

    pub fn list(&self) -> Vec<Download> {
        self.lock().entries.clone()
    }

    /// GGUF repositories matching `query` (blocking).
    pub fn search(&self, query: &str) -> Result<Vec<HubModel>, DownloadsError> {
        Ok(self.client(self.hub.clone())?.search(query, SEARCH_LIMIT)?)
    }

    /// `repo`'s GGUF models with footprints and fit badges for this machine (blocking).
    pub fn repo(&self, repo: &str) -> Result<RepoView, DownloadsError> {
        let files = self.client(self.hub.clone())?.list_files(repo, REVISION)?;
        let memory = self.memory();
        let session = planned_session(&memory);
        Ok(RepoView {
            repo: repo.to_string(),
            memory,
            context_len: session.context_len,
            choices: assess_choices(gguf_choices(&files), memory.budget, &session),
            convertible: is_convertible(&files),
        })
    }

    /// The curated models for this machine's tier that the Hub has (blocking). Empty when the
    /// Hub cannot be reached: the pinned default model is the offline choice.
    pub fn recommendations(&self) -> Vec<Recommendation> {
        let hub = HubConfig { stall_timeout: RECOMMENDATION_TIMEOUT, ..self.hub.clone() };
        let Ok(client) = self.client(hub) else { return Vec::new() };
        let memory = self.memory();
        let session = planned_session(&memory);
        let mut found = Vec::new();
        for curated in curated_for(memory.tier) {
            let files = match client.list_files(curated.repo, REVISION) {
                Ok(files) => files,
                Err(error) if error.is_transient() => {
                    tracing::info!(%error, "no recommendations: the Hub is not reachable");
                    return Vec::new();
                }
                Err(error) => {
                    tracing::warn!(%error, repo = curated.repo, "a recommended model is not on the Hub");
                    continue;
                }
            };
            let choice =
                assess_choices(gguf_choices(&files), memory.budget, &session).into_iter().find(|assessed| {
                    assessed
                        .choice
                        .quantization
                        .as_deref()
                        .is_some_and(|label| label.eq_ignore_ascii_case(curated.quantization))
                });
            if let Some(choice) = choice {
                found.push(Recommendation {
                    title: curated.title.to_string(),
                    repo: curated.repo.to_string(),
                    choice,
                });
            }
        }
        found
    }

    /// Starts downloading `repo`'s model `choice` (a name from `repo`'s view), or returns the
    /// download of it already in the list (blocking: asks the Hub for the files).
    pub fn start(self: &Arc<Self>, repo: &str, choice: &str) -> Result<Download, DownloadsError> {
        let store = self.store()?;
        let files = self.client(self.hub.clone())?.list_files(repo, REVISION)?;
        let chosen =
            gguf_choices(&files).into_iter().find(|candidate| candidate.name == choice).ok_or_else(|| {
                DownloadsError::NoSuchChoice { repo: repo.to_string(), choice: choice.to_string() }
            })?;
        let mut downloads = self.lock();
        // A failed download starts over, and so does a finished one whose model was deleted.
        let still_good = |download: &Download| match download.status {
            DownloadStatus::Failed => false,
            DownloadStatus::Done => {
                download.model_id.as_deref().is_some_and(|name| matches!(store.get(name), Ok(Some(_))))
            }
            _ => true,
        };
        if let Some(existing) = downloads
            .entries
            .iter()
            .find(|download| download.repo == repo && download.choice == choice && still_good(download))
        {
            return Ok(existing.clone());
        }
        // Before the download it replaces leaves: a new id, never one the UI still shows.
        let id = downloads.entries.iter().map(|download| download.id).max().unwrap_or(0) + 1;
        downloads.entries.retain(|download| !(download.repo == repo && download.choice == choice));
        let download = Download {
            id,
            repo: repo.to_string(),
            revision: REVISION.to_string(),
            label: chosen.label().to_string(),
            choice: chosen.name.clone(),
            files: chosen.files.iter().map(DownloadFile::from).collect(),
            total: chosen.size,
            done: 0,
            bytes_per_second: 0.0,
            eta_seconds: None,
            status: DownloadStatus::Downloading,
            model_id: None,
            message: None,
        };
        downloads.entries.push(download.clone());
        self.save(&downloads);
        self.spawn(&mut downloads, id);
        Ok(download)
    }

    /// Stops a running download, keeping its partial files for `resume`.
    pub fn pause(&self, id: u64) -> Result<Download, DownloadsError> {
        let mut downloads = self.lock();
        let download = find(&mut downloads.entries, id)?;
        // Installing is a moment's work that has checked every byte: it finishes.
        if download.status != DownloadStatus::Downloading {
            return Ok(download.clone());
        }
        download.status = DownloadStatus::Paused;
        download.bytes_per_second = 0.0;
        download.eta_seconds = None;
        let paused = download.clone();
        if let Some((cancel, _)) = downloads.threads.get(&id) {
            cancel.cancel();
        }
        self.save(&downloads);
        self.emit(&paused);
        Ok(paused)
    }

    /// Goes on with a paused or failed download from the bytes it has.
    pub fn resume(self: &Arc<Self>, id: u64) -> Result<Download, DownloadsError> {
        let mut downloads = self.lock();
        let download = find(&mut downloads.entries, id)?;
        if !matches!(download.status, DownloadStatus::Paused | DownloadStatus::Failed) {
            return Err(DownloadsError::NotResumable(download.label.clone()));
        }
        download.status = DownloadStatus::Downloading;
        download.message = None;
        let resumed = download.clone();
        self.save(&downloads);
        self.emit(&resumed);
        self.spawn(&mut downloads, id);
        Ok(resumed)
    }

    /// Stops a download and deletes its partial files, or takes a finished one off the list.
    pub fn cancel(&self, id: u64) -> Result<(), DownloadsError> {
        let mut downloads = self.lock();
        let position = downloads
            .entries
            .iter()
            .position(|download| download.id == id)
            .ok_or(DownloadsError::NoSuchDownload(id))?;
        let download = downloads.entries.remove(position);
        let thread = downloads.threads.remove(&id);
        self.save(&downloads);
        drop(downloads);
        if let Some((cancel, handle)) = thread {
            cancel.cancel();
            // The part file is open and locked until the thread lets go of it.
            let _ = handle.join();
        }
        if download.status != DownloadStatus::Done {
            if let Ok(store) = &self.store {
                remove_partial_files(&store.downloads_dir(), &download);
            }
        }
        Ok(())
    }

    /// Runs download `id` on a thread of its own, after the thread it had before (if any) has
    /// let go of the part files.
    fn spawn(self: &Arc<Self>, downloads: &mut Downloads, id: u64) {
        let previous = downloads.threads.remove(&id);
        let cancel = CancelToken::new();
        let service = self.clone();
        let token = cancel.clone();
        let handle = std::thread::Builder::new()
            .name(format!("download-{id}"))
            .spawn(move || {
                if let Some((old_cancel, old_thread)) = previous {
                    old_cancel.cancel();
                    let _ = old_thread.join();
                }
                service.run(id, &token);
            })
            .expect("a download thread starts");
        downloads.threads.insert(id, (cancel, handle));
    }

    fn run(&self, id: u64, cancel: &CancelToken) {
        let Some(download) = self.lock().entries.iter().find(|download| download.id == id).cloned() else {
            return;
        };
        let result = self.store().and_then(|store| {
            let client = self.client(self.hub.clone())?;
            let request = PullRequest {
                repo: download.repo.clone(),
                revision: download.revision.clone(),
                selection: Selection::File(download.files[0].path.clone()),
                name: None,
            };
            let mut last_emit = None;
            let mut on_event = |event: PullEvent| self.progress(id, event, &mut last_emit);
            Ok(pull(&client, store, &request, &self.policy, cancel, &mut on_event))
        });
        let mut downloads = self.lock();
        let Ok(entry) = find(&mut downloads.entries, id) else { return };
        match result {
            Ok(Ok(outcome)) => {
                entry.status = DownloadStatus::Done;
                entry.done = entry.total;
                entry.model_id = Some(outcome.model().name().to_string());
                entry.message = match outcome {
                    PullOutcome::Installed(_) => None,
                    PullOutcome::AlreadyInstalled(_) => Some("was installed already".to_string()),
                };
            }
            Ok(Err(PullError::Download(DownloadError::Cancelled { .. }))) if cancel.is_cancelled() => {
                // Paused or cancelled: whoever stopped it set its state.
                return;
            }
            Ok(Err(error)) => fail(entry, error.to_string()),
            Err(error) => fail(entry, error.to_string()),
        }
        entry.bytes_per_second = 0.0;
        entry.eta_seconds = None;
        let finished = entry.clone();
        self.save(&downloads);
        drop(downloads);
        self.emit(&finished);
    }

    fn progress(&self, id: u64, event: PullEvent, last_emit: &mut Option<Instant>) {
        let mut downloads = self.lock();
        let Ok(entry) = find(&mut downloads.entries, id) else { return };
        let mut status_changed = false;
        match event {
            PullEvent::Progress { done, total, bytes_per_second, eta } => {
                entry.done = done;
                entry.total = total;
                entry.bytes_per_second = bytes_per_second;
                entry.eta_seconds = eta.map(|eta| eta.as_secs_f64());
                entry.message = None;
            }
            PullEvent::Resumed { from, .. } => entry.done = entry.done.max(from),
            PullEvent::Retrying { reason, wait, .. } => {
                entry.message = Some(format!("{reason}; retrying in {:.0} s", wait.as_secs_f64().ceil()));
                status_changed = true;
            }
            PullEvent::Installing { .. } => {
                entry.status = DownloadStatus::Installing;
                status_changed = true;
            }
            PullEvent::Chosen { .. } => {}
        }
        if status_changed || last_emit.is_none_or(|last| last.elapsed() >= PROGRESS_INTERVAL) {
            *last_emit = Some(Instant::now());
            let view = entry.clone();
            if status_changed {
                self.save(&downloads);
            }
            drop(downloads);
            self.emit(&view);
        }
    }

    fn emit(&self, download: &Download) {
        if let Some(sink) = self.sink.lock().expect("the sink lock is never poisoned").as_ref() {
            sink(download);
        }
    }

    fn save(&self, downloads: &Downloads) {
        self.list.write(&downloads.entries);
    }

    fn memory(&self) -> MachineMemory {
        *self.memory.get_or_init(|| (self.memory_probe)())
    }

    fn client(&self, config: HubConfig) -> Result<HubClient, DownloadsError> {
        Ok(HubClient::new(config)?)
    }

    fn store(&self) -> Result<&ModelStore, DownloadsError> {
        self.store.as_ref().map_err(|reason| DownloadsError::StoreUnavailable(reason.clone()))
    }

    fn lock(&self) -> MutexGuard<'_, Downloads> {
        self.downloads.lock().expect("the downloads lock is never poisoned")
    }
}

/// The memory of the adapter the engine opens (the best one, or the one `DOPPLER_ADAPTER`
/// names), as `doppler devices` reports it.
pub fn adapter_memory() -> MachineMemory {
    let options = GpuOptions::from_env();
    let adapters = doppler_engine::gpu::list_adapters();
    let chosen = match &options.adapter_filter {
        Some(filter) => {
            let wanted = filter.to_lowercase();
            adapters.into_iter().find(|adapter| adapter.name.to_lowercase().contains(&wanted))
        }
        None => adapters.into_iter().next(),
    };
    match chosen {
        Some(adapter) => MachineMemory {
            budget: adapter.memory.budget,
            tier: Some(adapter.memory.tier),
            kv_f16: adapter.capabilities.shader_f16 && !options.disable_f16,
        },
        None => MachineMemory { budget: None, tier: None, kv_f16: false },
    }
}

fn planned_session(memory: &MachineMemory) -> PlannedSession {
    PlannedSession { kv_f16: memory.kv_f16, ..PlannedSession::default() }
}

fn find(entries: &mut [Download], id: u64) -> Result<&mut Download, DownloadsError> {
    entries.iter_mut().find(|download| download.id == id).ok_or(DownloadsError::NoSuchDownload(id))
}

fn fail(entry: &mut Download, reason: String) {
    entry.status = DownloadStatus::Failed;
    entry.message = Some(reason);
}

/// Deletes what a download left in the store's downloads folder: part files, their state
/// and lock files.
fn remove_partial_files(dir: &Path, download: &Download) {
    for file in &download.files {
        let remote = RemoteFile {
            repo: download.repo.clone(),
            revision: download.revision.clone(),
            file: file.into(),
        };
        let part = part_path(dir, &remote);
        let mut lock = part.clone().into_os_string();
        lock.push(".lock");
        for path in [state_path(&part), PathBuf::from(lock), part] {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(%error, path = %path.display(), "could not remove a partial download")
                }
            }
        }
    }
}
