//! The model manager's download service against a stand-in Hub on 127.0.0.1 (real sockets,
//! the real client): search, a repository view with fit badges, a download with progress
//! that installs a model, pause and resume with a Range request, a download the last run left
//! running resumed by the next, and cancel deleting the partial files.

#[path = "../../tests/support/hub_standin.rs"]
mod hub_standin;

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use doppler_app::core::downloads::{Download, DownloadFile, DownloadService, DownloadStatus, MachineMemory};
use doppler_engine::{gpu::MemoryTier, store::ModelStore};
use doppler_store::{
    download::{download_file, CancelToken, RemoteFile, RetryPolicy, TransferEvent},
    hub::{HubClient, HubConfig, RepoFile},
    quant::Fit,
};
use hub_standin::{sha256_hex, HubStandin, StandinFile, Trickle};

const REPO: &str = "doppler-test/Llama-Tiny-GGUF";
const FILE: &str = "llama-tiny-Q8_0.gguf";
const TIMEOUT: Duration = Duration::from_secs(30);

fn model_bytes() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/llama3/model.gguf")).unwrap()
}

fn standin() -> HubStandin {
    let hub = HubStandin::start();
    hub.add_repo(
        REPO,
        vec![
            StandinFile::new(FILE, model_bytes()),
            StandinFile::new("llama-tiny-F16.gguf", vec![0; 40 << 20]),
            StandinFile::new("README.md", b"# tiny".to_vec()),
        ],
    );
    hub
}

/// A slow link: the download stays running long enough to pause it.
fn slow(hub: &HubStandin) {
    hub.set_trickle(Some(Trickle {
        fast_bytes: 256 * 1024,
        chunk: 8 * 1024,
        interval: Duration::from_millis(20),
    }));
}

struct Setup {
    hub: HubStandin,
    home: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup { hub: standin(), home: tempfile::tempdir().unwrap() }
    }

    fn store(&self) -> ModelStore {
        ModelStore::open(self.home.path().join("store")).unwrap()
    }

    fn list_path(&self) -> std::path::PathBuf {
        self.home.path().join("downloads.json")
    }

    /// A service as the app starts it, with a 40 MiB budget (the tiny model fits, its F16 copy
    /// does not), and the changes it reports.
    fn service(&self) -> (Arc<DownloadService>, Arc<Mutex<Vec<Download>>>) {
        let policy = RetryPolicy {
            max_attempts: 3,
            first_backoff: Duration::from_millis(10),
            ..RetryPolicy::default()
        };
        let memory = MachineMemory { budget: Some(40 << 20), tier: Some(MemoryTier::Cpu), kv_f16: true };
        let service = DownloadService::new(
            HubConfig::new(&self.hub.url),
            Ok(self.store()),
            self.list_path(),
            policy,
            Box::new(move || memory),
        );
        let changes = Arc::new(Mutex::new(Vec::new()));
        let sink = changes.clone();
        service.watch(Box::new(move |download| sink.lock().unwrap().push(download.clone())));
        (service, changes)
    }
}

fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn status_of(service: &DownloadService, id: u64) -> Download {
    service.list().into_iter().find(|download| download.id == id).expect("the download is listed")
}

fn part_bytes(store: &ModelStore) -> u64 {
    std::fs::read_dir(store.downloads_dir())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".part"))
        .map(|entry| entry.metadata().unwrap().len())
        .sum()
}

fn saved_list(path: &Path) -> Vec<Download> {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn search_and_the_repository_view_judge_each_quantization() {
    let setup = Setup::new();
    let (service, _) = setup.service();
    let found = service.search("llama-tiny").unwrap();
    assert_eq!(found[0].id, REPO);

    let view = service.repo(REPO).unwrap();
    assert_eq!(view.memory.budget, Some(40 << 20));
    let verdicts: Vec<_> = view
        .choices
        .iter()
        .map(|assessed| (assessed.choice.label().to_string(), assessed.fit, assessed.recommended))
        .collect();
    assert_eq!(
        verdicts,
        [("Q8_0".to_string(), Some(Fit::Fits), true), ("F16".to_string(), Some(Fit::TooBig), false)],
        "the README is no model; the F16 copy's weights, KV cache and scratch exceed the budget"
    );
    let footprint = view.choices[0].footprint;
    assert_eq!(footprint.weights, model_bytes().len() as u64);
    assert!(footprint.kv_cache > 0 && footprint.scratch > 0);

    let missing = service.repo("doppler-test/nothing-here").unwrap_err();
    assert!(
        missing.to_string().contains("needs access"),
        "the Hub answers 401 for a missing repository: {missing}"
    );
}

#[test]
fn a_download_reports_progress_installs_the_model_and_is_remembered() {
    let setup = Setup::new();
    let (service, changes) = setup.service();
    let started = service.start(REPO, FILE).unwrap();
    assert_eq!(started.status, DownloadStatus::Downloading);
    assert_eq!(started.total, model_bytes().len() as u64);

    wait_for("the download is done", || status_of(&service, started.id).status == DownloadStatus::Done);
    let done = status_of(&service, started.id);
    assert_eq!(done.model_id.as_deref(), Some("llama-tiny-q8_0"));
    assert_eq!(done.done, done.total);
    let installed = setup.store().get("llama-tiny-q8_0").unwrap().expect("the model is installed");
    assert_eq!(installed.manifest.sha256, sha256_hex(&model_bytes()));

    // The service's status turns Done just before the watcher hears it.
    wait_for("the watcher hears Done", || {
        changes.lock().unwrap().last().is_some_and(|change| change.status == DownloadStatus::Done)
    });
    assert!(changes.lock().unwrap().iter().any(|change| change.status == DownloadStatus::Installing));
    assert_eq!(saved_list(&setup.list_path())[0].status, DownloadStatus::Done);

    // Starting it again gives the listed download rather than a second one, until the model
    // is deleted.
    assert_eq!(service.start(REPO, FILE).unwrap().id, started.id);
    assert!(service.start(REPO, "no-such.gguf").is_err());
    setup.store().remove("llama-tiny-q8_0").unwrap();
    let again = service.start(REPO, FILE).unwrap();
    assert_ne!(again.id, started.id);
    wait_for("the second download ends", || {
        matches!(status_of(&service, again.id).status, DownloadStatus::Done | DownloadStatus::Failed)
    });
    let again = status_of(&service, again.id);
    assert_eq!(again.status, DownloadStatus::Done, "{again:?}");
    assert_eq!(service.list().len(), 1, "the new download took the old one's place");
}

#[test]
fn a_paused_download_resumes_from_its_bytes() {
    let setup = Setup::new();
    slow(&setup.hub);
    let (service, changes) = setup.service();
    let id = service.start(REPO, FILE).unwrap().id;
    let store = setup.store();
    wait_for("bytes arrive", || part_bytes(&store) >= 300_000);
    wait_for("progress reports a speed", || {
        changes.lock().unwrap().iter().any(|change| change.done >= 300_000 && change.bytes_per_second > 0.0)
    });
    let paused = service.pause(id).unwrap();
    assert_eq!(paused.status, DownloadStatus::Paused);
    assert_eq!(saved_list(&setup.list_path())[0].status, DownloadStatus::Paused);

    setup.hub.set_trickle(None);
    assert_eq!(service.resume(id).unwrap().status, DownloadStatus::Downloading);
    wait_for("the resumed download is done", || status_of(&service, id).status == DownloadStatus::Done);
    let starts = setup.hub.range_starts();
    assert_eq!(starts[0], None);
    assert!(starts.last().unwrap().is_some_and(|start| start >= 300_000), "resumed with a Range: {starts:?}");
    assert!(setup.store().get("llama-tiny-q8_0").unwrap().is_some());
}

#[test]
fn a_download_the_last_run_left_running_resumes_when_the_service_starts() {
    let setup = Setup::new();
    let store = setup.store();
    // What a killed app leaves: part of the file, and a list that says it was downloading.
    let bytes = model_bytes();
    let file =
        RepoFile { path: FILE.to_string(), size: bytes.len() as u64, sha256: Some(sha256_hex(&bytes)) };
    let remote = RemoteFile { repo: REPO.to_string(), revision: "main".to_string(), file: file.clone() };
    let client = HubClient::new(HubConfig::new(&setup.hub.url)).unwrap();
    let cancel = CancelToken::new();
    slow(&setup.hub);
    let stopped = download_file(
        &client,
        &remote,
        &store.downloads_dir(),
        &RetryPolicy::default(),
        &cancel,
        &mut |event| {
            if matches!(event, TransferEvent::Received { done, .. } if done >= 300_000) {
                cancel.cancel();
            }
        },
    );
    assert!(stopped.is_err(), "the first run was stopped mid-download");
    setup.hub.set_trickle(None);
    let left = Download {
        id: 7,
        repo: REPO.to_string(),
        revision: "main".to_string(),
        choice: FILE.to_string(),
        label: "Q8_0".to_string(),
        files: vec![DownloadFile::from(&file)],
        total: file.size,
        done: 300_000,
        bytes_per_second: 0.0,
        eta_seconds: None,
        status: DownloadStatus::Downloading,
        model_id: None,
        message: None,
    };
    std::fs::write(setup.list_path(), serde_json::to_vec(&[left]).unwrap()).unwrap();

    let (service, _) = setup.service();
    assert_eq!(service.list().len(), 1);
    service.resume_interrupted();
    wait_for("the interrupted download is done", || status_of(&service, 7).status == DownloadStatus::Done);
    let starts = setup.hub.range_starts();
    assert!(starts.last().unwrap().is_some_and(|start| start >= 300_000), "resumed with a Range: {starts:?}");
    assert!(setup.store().get("llama-tiny-q8_0").unwrap().is_some());
}

#[test]
fn cancel_stops_the_download_and_deletes_its_partial_files() {
    let setup = Setup::new();
    slow(&setup.hub);
    let (service, _) = setup.service();
    let id = service.start(REPO, FILE).unwrap().id;
    let store = setup.store();
    wait_for("bytes arrive", || part_bytes(&store) > 0);
    service.cancel(id).unwrap();
    assert!(service.list().is_empty());
    assert!(saved_list(&setup.list_path()).is_empty());
    let left: Vec<_> =
        std::fs::read_dir(store.downloads_dir()).unwrap().flatten().map(|entry| entry.file_name()).collect();
    assert!(left.is_empty(), "partial files left: {left:?}");
    assert!(store.get("llama-tiny-q8_0").unwrap().is_none());
    assert!(service.cancel(id).is_err());
}
