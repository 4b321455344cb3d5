//! The model manager's conversion service against a stand-in Hub on 127.0.0.1 (real sockets,
//! the real client): a safetensors repository shows as convertible, converts to the picked
//! quantization with download and conversion progress, and installs a model the store lists;
//! a cancelled conversion installs nothing and the next one resumes its downloads; the list
//! survives a restart: a conversion the app was killed during goes on when the next service
//! starts, and ended ones can be resumed or dismissed.

#[path = "../../tests/support/hf_folder.rs"]
mod hf_folder;
#[path = "../../tests/support/hub_standin.rs"]
mod hub_standin;

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use doppler_app::core::conversions::{Conversion, ConversionError, ConversionService, ConversionStatus};
use doppler_engine::store::ModelStore;
use doppler_store::{
    convert::is_convertible,
    download::RetryPolicy,
    hub::{HubClient, HubConfig},
};
use hub_standin::{HubStandin, StandinFile, Trickle};

const REPO: &str = "doppler-test/Qwen2-Tiny";

/// The stand-in Hub serving a tiny safetensors repository, with the summed size of the files
/// besides its weights (those download first).
fn standin() -> (HubStandin, u64) {
    let folder = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/qwen2/model.gguf");
    hf_folder::write_hf_folder(std::path::Path::new(fixture), folder.path());
    let read = |name: &str| std::fs::read(folder.path().join(name)).unwrap();
    let mut files: Vec<StandinFile> = ["config.json", "tokenizer.json", "tokenizer_config.json"]
        .into_iter()
        .map(|name| StandinFile::plain(name, read(name)))
        .collect();
    let small_files: u64 = files.iter().map(|file| file.bytes.len() as u64).sum();
    files.push(StandinFile::new("model.safetensors", read("model.safetensors")));
    let hub = HubStandin::start();
    hub.add_repo(REPO, files);
    (hub, small_files)
}

/// The app's data folder as a test lays it out: the model store, and the conversions list.
fn store_in(home: &Path) -> ModelStore {
    ModelStore::open(home.join("store")).unwrap()
}

fn list_path(home: &Path) -> PathBuf {
    home.join("conversions.json")
}

/// The service as the app opens it in `home`, with every change it sends to the window
/// collected.
fn watched_service(config: HubConfig, home: &Path) -> (Arc<ConversionService>, Arc<Mutex<Vec<Conversion>>>) {
    let service = ConversionService::new(config, Ok(store_in(home)), list_path(home), RetryPolicy::default());
    let changes = Arc::new(Mutex::new(Vec::<Conversion>::new()));
    let sink = changes.clone();
    service.watch(Box::new(move |conversion| sink.lock().unwrap().push(conversion.clone())));
    (service, changes)
}

fn saved_list(home: &Path) -> Vec<Conversion> {
    serde_json::from_slice(&std::fs::read(list_path(home)).unwrap()).unwrap()
}

/// The first change of conversion `id` that `wanted` accepts, waiting up to a minute.
fn wait_for_change(
    service: &ConversionService,
    changes: &Mutex<Vec<Conversion>>,
    id: u64,
    wanted: impl Fn(&Conversion) -> bool,
) -> Conversion {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = changes.lock().unwrap().iter().find(|change| change.id == id && wanted(change)).cloned();
        if let Some(found) = found {
            return found;
        }
        assert!(Instant::now() < deadline, "the awaited change did not come: {:?}", service.list());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ended(conversion: &Conversion) -> bool {
    matches!(
        conversion.status,
        ConversionStatus::Done | ConversionStatus::Failed | ConversionStatus::Cancelled
    )
}

#[test]
fn a_safetensors_repo_converts_with_progress_into_the_store() {
    let (hub, _) = standin();
    let home = tempfile::tempdir().unwrap();
    let store = store_in(home.path());
    let config = HubConfig::new(&hub.url);
    assert!(is_convertible(&HubClient::new(config.clone()).unwrap().list_files(REPO, "main").unwrap()));

    let (service, changes) = watched_service(config, home.path());
    assert!(service.list().is_empty());
    assert!(service.start(REPO, "Q2_K").unwrap_err().to_string().contains("Q4_K_M"));
    let started = service.start(REPO, "q4_k_m").unwrap();
    assert_eq!((started.quant.as_str(), started.status), ("Q4_K_M", ConversionStatus::Downloading));
    // Asked again while it runs: the same conversion.
    assert_eq!(service.start(REPO, "Q4_K_M").unwrap().id, started.id);

    let finished = wait_for_change(&service, &changes, started.id, ended);
    assert_eq!(finished.status, ConversionStatus::Done, "{:?}", finished.message);
    assert_eq!(finished.model_id.as_deref(), Some("qwen2-tiny-rdrr"));
    let statuses: Vec<ConversionStatus> =
        changes.lock().unwrap().iter().map(|change| change.status).collect();
    assert!(statuses.contains(&ConversionStatus::Downloading), "{statuses:?}");
    assert!(statuses.contains(&ConversionStatus::Converting), "{statuses:?}");
    let installed = store.get("qwen2-tiny-rdrr").unwrap().expect("installed");
    assert_eq!(installed.manifest.quantization.as_deref(), Some("Q4_K_M"));
}

#[test]
fn a_cancelled_conversion_installs_nothing_and_the_next_one_resumes() {
    let (hub, small_files) = standin();
    // Slow enough that the weights are still downloading when the cancel comes.
    hub.set_trickle(Some(Trickle { fast_bytes: 0, chunk: 8 << 10, interval: Duration::from_millis(50) }));
    let home = tempfile::tempdir().unwrap();
    let store = store_in(home.path());
    let (service, changes) = watched_service(HubConfig::new(&hub.url), home.path());
    assert!(matches!(service.cancel(7), Err(ConversionError::NotFound(7))));

    let started = service.start(REPO, "Q8_0").unwrap();
    wait_for_change(&service, &changes, started.id, |change| change.done > small_files);
    service.cancel(started.id).unwrap();
    let cancelled = wait_for_change(&service, &changes, started.id, ended);
    assert_eq!(cancelled.status, ConversionStatus::Cancelled, "{:?}", cancelled.message);
    assert!(cancelled.message.as_deref().is_some_and(|message| message.contains("Cancelled")));
    assert_eq!(cancelled.model_id, None);
    assert!(store.list().unwrap().is_empty(), "nothing is installed");
    assert!(store.get("qwen2-tiny-rdrr").unwrap().is_none());
    let downloads: Vec<String> = std::fs::read_dir(store.downloads_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(downloads, ["hub-sources"], "the partial downloads stay, no conversion scratch folder");
    // Cancelling an ended conversion changes nothing.
    service.cancel(started.id).unwrap();
    assert_eq!(service.list()[0].status, ConversionStatus::Cancelled);

    hub.set_trickle(None);
    let again = service.start(REPO, "Q8_0").unwrap();
    assert_ne!(again.id, started.id);
    let finished = wait_for_change(&service, &changes, again.id, ended);
    assert_eq!(finished.status, ConversionStatus::Done, "{:?}", finished.message);
    assert!(store.get("qwen2-tiny-rdrr").unwrap().is_some());
    let resumed_weights = hub.range_starts().into_iter().flatten().any(|start| start > 0);
    assert!(resumed_weights, "the weights' download resumed: {:?}", hub.range_starts());
    assert_eq!(service.list().len(), 1, "the new conversion took the cancelled one's place");
}

#[test]
fn a_cancelled_conversion_resumes_and_an_ended_one_is_dismissed() {
    let (hub, small_files) = standin();
    hub.set_trickle(Some(Trickle { fast_bytes: 0, chunk: 8 << 10, interval: Duration::from_millis(50) }));
    let home = tempfile::tempdir().unwrap();
    let (service, changes) = watched_service(HubConfig::new(&hub.url), home.path());
    let started = service.start(REPO, "F16").unwrap();
    assert!(matches!(service.resume(started.id), Err(ConversionError::NotResumable(_))));
    assert!(matches!(service.dismiss(started.id), Err(ConversionError::StillRunning(_))));
    wait_for_change(&service, &changes, started.id, |change| change.done > small_files);
    service.cancel(started.id).unwrap();
    wait_for_change(&service, &changes, started.id, ended);
    assert_eq!(saved_list(home.path())[0].status, ConversionStatus::Cancelled);

    hub.set_trickle(None);
    changes.lock().unwrap().clear();
    let resumed = service.resume(started.id).unwrap();
    assert_eq!((resumed.id, resumed.status), (started.id, ConversionStatus::Downloading));
    let finished = wait_for_change(&service, &changes, started.id, ended);
    assert_eq!(finished.status, ConversionStatus::Done, "{:?}", finished.message);
    assert!(hub.range_starts().into_iter().flatten().any(|start| start > 0), "{:?}", hub.range_starts());
    assert_eq!(saved_list(home.path())[0].status, ConversionStatus::Done);

    service.dismiss(started.id).unwrap();
    assert!(service.list().is_empty());
    assert!(saved_list(home.path()).is_empty());
    assert!(matches!(service.dismiss(started.id), Err(ConversionError::NotFound(_))));
    assert!(store_in(home.path()).get("qwen2-tiny-rdrr").unwrap().is_some(), "dismissing keeps the model");
}

/// Set in the child process the restart test kills: `<Hub URL> <data folder>`.
const KILLED_APP_ENV: &str = "DOPPLER_TEST_CONVERSION_TO_KILL";
const RESTART_TEST: &str = "a_conversion_the_app_was_killed_during_resumes_when_the_next_service_starts";

/// The part file of the weights' download, once it exists.
fn weights_part(store: &ModelStore) -> Option<PathBuf> {
    let sources = std::fs::read_dir(store.downloads_dir().join("hub-sources")).ok()?;
    sources
        .flatten()
        .filter_map(|source| std::fs::read_dir(source.path()).ok())
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.to_string_lossy().ends_with("-model.safetensors.part"))
}

#[test]
fn a_conversion_the_app_was_killed_during_resumes_when_the_next_service_starts() {
    if let Ok(setup) = std::env::var(KILLED_APP_ENV) {
        // The app this test kills: it converts until the kill comes.
        let (url, home) = setup.split_once(' ').unwrap();
        let (service, _) = watched_service(HubConfig::new(url), Path::new(home));
        service.start(REPO, "Q8_0").unwrap();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let (hub, _) = standin();
    hub.set_trickle(Some(Trickle { fast_bytes: 0, chunk: 8 << 10, interval: Duration::from_millis(20) }));
    let home = tempfile::tempdir().unwrap();
    let store = store_in(home.path());
    let mut app = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", RESTART_TEST, "--nocapture"])
        .env(KILLED_APP_ENV, format!("{} {}", hub.url, home.path().display()))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while weights_part(&store).is_none_or(|part| std::fs::metadata(part).unwrap().len() < 128 << 10) {
        assert!(app.try_wait().unwrap().is_none(), "the app ended before it was killed");
        assert!(Instant::now() < deadline, "the weights' download did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    app.kill().unwrap();
    app.wait().unwrap();

    hub.set_trickle(None);
    let (service, changes) = watched_service(HubConfig::new(&hub.url), home.path());
    let listed = service.list();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].repo.as_str(), listed[0].status), (REPO, ConversionStatus::Downloading));
    assert!(store.list().unwrap().is_empty());
    service.resume_interrupted();
    let finished = wait_for_change(&service, &changes, listed[0].id, ended);
    assert_eq!(finished.status, ConversionStatus::Done, "{:?}", finished.message);
    assert_eq!(finished.model_id.as_deref(), Some("qwen2-tiny-rdrr"));
    assert!(store.get("qwen2-tiny-rdrr").unwrap().is_some());
    let resumed = hub.range_starts().into_iter().flatten().any(|start| start > 0);
    assert!(resumed, "the weights' download resumed with a Range: {:?}", hub.range_starts());
    assert_eq!(saved_list(home.path())[0].status, ConversionStatus::Done);
}
