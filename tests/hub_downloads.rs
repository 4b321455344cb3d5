//! The Hub client and the download engine over real sockets, against a stand-in Hub on
//! 127.0.0.1 that injects faults: dropped connections, stalls, server errors, 416, wrong
//! bytes, wrong sizes, gated repositories.

#[path = "support/hub_standin.rs"]
mod hub_standin;

use std::time::Duration;

use doppler_engine::store::{ModelStore, StoreError};
use doppler_store::{
    download::{CancelToken, DownloadError, RetryPolicy},
    hub::{HubClient, HubConfig, HubError, ModelFormat},
    pull,
    quant::{gguf_choices, recommend, Fit},
    PullError, PullEvent, PullOutcome, PullRequest, Selection,
};
use hub_standin::{llama_gguf, sha256_hex, Fault, HubStandin, StandinFile};

const REPO: &str = "doppler-test/Llama-Tiny-GGUF";

struct Setup {
    hub: HubStandin,
    client: HubClient,
    store: ModelStore,
    _home: tempfile::TempDir,
}

fn setup(files: Vec<StandinFile>) -> Setup {
    let hub = HubStandin::start();
    hub.add_repo(REPO, files);
    let mut config = HubConfig::new(&hub.url);
    config.stall_timeout = Duration::from_secs(1);
    let client = HubClient::new(config).unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    Setup { hub, client, store, _home: home }
}

fn llama_repo() -> Vec<StandinFile> {
    vec![StandinFile::new("llama-tiny-Q8_0.gguf", llama_gguf())]
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        first_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
    }
}

fn pull_quant(setup: &Setup, quant: &str) -> Result<PullOutcome, PullError> {
    let request = PullRequest {
        repo: REPO.to_string(),
        revision: "main".to_string(),
        selection: Selection::Quant(quant.to_string()),
        name: None,
    };
    pull(&setup.client, &setup.store, &request, &quick_retries(), &CancelToken::new(), &mut |_| {})
}

fn assert_installed_intact(setup: &Setup) {
    let models = setup.store.list().unwrap();
    assert_eq!(models.len(), 1, "{models:?}");
    let model = &models[0];
    assert_eq!(model.name(), "llama-tiny-q8_0");
    assert_eq!(model.manifest.sha256, sha256_hex(&llama_gguf()));
    assert_eq!(model.manifest.architecture.as_deref(), Some("llama"));
    assert_eq!(model.manifest.source, format!("hf:{REPO}@main/llama-tiny-Q8_0.gguf"));
    setup.store.verify(model).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(setup.store.downloads_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".lock"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn assert_nothing_installed(setup: &Setup) {
    assert!(setup.store.list().unwrap().is_empty());
    assert!(std::fs::read_dir(setup.store.root().join("models")).unwrap().next().is_none());
}

#[test]
fn search_lists_gguf_and_safetensors_repositories_with_their_formats() {
    let setup = setup(llama_repo());
    setup.hub.add_repo("someone/Other-GGUF", llama_repo());
    let safetensors = || StandinFile::new("model.safetensors", vec![0; 64]);
    setup.hub.add_repo("doppler-test/Llama-Tiny", vec![safetensors()]);
    setup.hub.add_repo("doppler-test/Llama-Tiny-Both", vec![safetensors(), llama_repo().remove(0)]);
    setup.hub.add_repo("doppler-test/Llama-Tiny-Onnx", vec![StandinFile::new("model.onnx", vec![0; 64])]);
    let models = setup.client.search("llama-tiny", 20).unwrap();
    let found: Vec<(&str, &[ModelFormat])> =
        models.iter().map(|model| (model.id.as_str(), model.formats.as_slice())).collect();
    assert_eq!(
        found,
        [
            ("doppler-test/Llama-Tiny-Both", &[ModelFormat::Gguf, ModelFormat::Safetensors][..]),
            (REPO, &[ModelFormat::Gguf]),
            ("doppler-test/Llama-Tiny", &[ModelFormat::Safetensors]),
        ],
        "each repository once, GGUF ones first among equal downloads; neither format, not at all"
    );
    assert_eq!(models[0].downloads, Some(1234));
    assert_eq!(setup.client.search("llama-tiny", 2).unwrap().len(), 2);
    let json = serde_json::to_value(&models[0]).unwrap();
    assert_eq!(json["formats"], serde_json::json!(["gguf", "safetensors"]), "{json}");
    assert!(setup.client.search("nothing-like-this", 20).unwrap().is_empty());
}

#[test]
fn files_are_grouped_by_quantization_with_a_recommendation() {
    let gguf = llama_gguf();
    let setup = setup(vec![
        StandinFile::new("llama-tiny-Q8_0.gguf", gguf.clone()),
        StandinFile::new("llama-tiny-Q4_K_M.gguf", gguf[..1000].to_vec()),
        StandinFile::new("F16/llama-tiny-F16-00001-of-00002.gguf", gguf.clone()),
        StandinFile::new("F16/llama-tiny-F16-00002-of-00002.gguf", gguf.clone()),
    ]);
    let files = setup.client.list_files(REPO, "main").unwrap();
    assert_eq!(files.len(), 5, "README.md and four GGUF files, no directories: {files:?}");
    let readme = files.iter().find(|file| file.path == "README.md").unwrap();
    assert_eq!(readme.sha256, None);
    let choices = gguf_choices(&files);
    let labels: Vec<(&str, u64)> = choices.iter().map(|choice| (choice.label(), choice.size)).collect();
    let size = gguf.len() as u64;
    assert_eq!(labels, [("Q4_K_M", 1000), ("Q8_0", size), ("F16", 2 * size)]);
    assert_eq!(choices[1].files[0].sha256.as_deref(), Some(sha256_hex(&gguf).as_str()));
    let by_size = |choice: &doppler_store::quant::GgufChoice| choice.size;
    assert_eq!(recommend(&choices, 10 * size, by_size).unwrap().label(), "Q8_0");
    assert_eq!(recommend(&choices, size / 2, by_size).unwrap().label(), "Q4_K_M");
    assert_eq!(Fit::of(size, size), Fit::Tight);
}

#[test]
fn a_pull_installs_a_verified_model_and_a_second_finds_it() {
    let setup = setup(llama_repo());
    let mut events = Vec::new();
    let request = PullRequest {
        repo: REPO.to_string(),
        revision: "main".to_string(),
        selection: Selection::Only,
        name: None,
    };
    let outcome =
        pull(&setup.client, &setup.store, &request, &quick_retries(), &CancelToken::new(), &mut |event| {
            events.push(event)
        })
        .unwrap();
    assert!(matches!(outcome, PullOutcome::Installed(_)));
    assert_installed_intact(&setup);
    let size = llama_gguf().len() as u64;
    assert!(events.iter().any(
        |event| matches!(event, PullEvent::Progress { done, total, .. } if *done == size && *total == size)
    ));
    assert_eq!(setup.hub.range_starts(), [None]);
    let again = pull_quant(&setup, "q8_0").unwrap();
    assert!(matches!(again, PullOutcome::AlreadyInstalled(_)));
    assert_eq!(setup.hub.range_starts().len(), 1, "nothing downloaded again");
}

#[test]
fn a_dropped_connection_resumes_with_a_range_request() {
    let setup = setup(llama_repo());
    setup.hub.push_fault(Fault::DropAfter(700_000));
    pull_quant(&setup, "Q8_0").unwrap();
    assert_installed_intact(&setup);
    let starts = setup.hub.range_starts();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert!(starts[1].is_some_and(|start| start > 0 && start <= 700_000), "{starts:?}");
}

#[test]
fn a_stall_is_given_up_on_and_resumed() {
    let setup = setup(llama_repo());
    setup.hub.push_fault(Fault::StallAfter(300_000, Duration::from_secs(4)));
    let started = std::time::Instant::now();
    pull_quant(&setup, "Q8_0").unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "the 1 s stall timeout did not fire");
    assert_installed_intact(&setup);
    let starts = setup.hub.range_starts();
    assert!(starts.len() == 2 && starts[1].is_some_and(|start| start > 0), "{starts:?}");
}

#[test]
fn server_errors_are_retried_with_backoff() {
    let setup = setup(llama_repo());
    setup.hub.push_fault(Fault::Status(503));
    setup.hub.push_fault(Fault::Status(500));
    pull_quant(&setup, "Q8_0").unwrap();
    assert_installed_intact(&setup);
    assert_eq!(setup.hub.range_starts().len(), 3);
}

#[test]
fn persistent_server_errors_give_up_and_install_nothing() {
    let setup = setup(llama_repo());
    for _ in 0..4 {
        setup.hub.push_fault(Fault::Status(502));
    }
    let error = pull_quant(&setup, "Q8_0").unwrap_err();
    assert!(matches!(error, PullError::Download(DownloadError::GaveUp { attempts: 4, .. })), "{error}");
    assert!(error.to_string().contains("502"), "{error}");
    assert_nothing_installed(&setup);
}

#[test]
fn a_refused_resume_starts_over() {
    let setup = setup(llama_repo());
    setup.hub.push_fault(Fault::DropAfter(500_000));
    setup.hub.push_fault(Fault::Status(416));
    pull_quant(&setup, "Q8_0").unwrap();
    assert_installed_intact(&setup);
    let starts = setup.hub.range_starts();
    assert_eq!(starts.len(), 3, "{starts:?}");
    assert!(starts[1].is_some_and(|start| start > 0));
    assert_eq!(starts[2], None, "after the 416 the file starts over: {starts:?}");
}

#[test]
fn wrong_bytes_are_refused_naming_both_checksums() {
    let setup = setup(llama_repo());
    setup.hub.push_fault(Fault::CorruptByte(1_000_000));
    let error = pull_quant(&setup, "Q8_0").unwrap_err();
    let PullError::Download(DownloadError::ChecksumMismatch { expected, actual, .. }) = &error else {
        panic!("{error}")
    };
    assert_eq!(*expected, sha256_hex(&llama_gguf()));
    let mut corrupted = llama_gguf();
    corrupted[1_000_000] ^= 0xff;
    assert_eq!(*actual, sha256_hex(&corrupted));
    let message = error.to_string();
    assert!(message.contains(expected.as_str()) && message.contains(actual.as_str()), "{message}");
    assert_nothing_installed(&setup);
    // The bad bytes are gone: the next pull starts over and succeeds.
    pull_quant(&setup, "Q8_0").unwrap();
    assert_eq!(setup.hub.range_starts(), [None, None]);
    assert_installed_intact(&setup);
}

#[test]
fn a_wrong_size_is_refused() {
    let mut file = StandinFile::new("llama-tiny-Q8_0.gguf", llama_gguf());
    file.listed_size += 1000;
    let setup = setup(vec![file]);
    let error = pull_quant(&setup, "Q8_0").unwrap_err();
    assert!(matches!(error, PullError::Download(DownloadError::SizeMismatch { .. })), "{error}");
    assert!(error.to_string().contains(&(llama_gguf().len() + 1000).to_string()), "{error}");
    assert_nothing_installed(&setup);
}

#[test]
fn a_gated_repository_asks_for_a_token() {
    let setup = setup(llama_repo());
    setup.hub.gate_repo(REPO, "hf_secret");
    let error = setup.client.list_files(REPO, "main").unwrap_err();
    assert!(matches!(error, HubError::Gated { status: 401, .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("HF_TOKEN") && message.contains("license"), "{message}");
    let mut config = HubConfig::new(&setup.hub.url);
    config.token = Some("hf_secret".to_string());
    let client = HubClient::new(config).unwrap();
    assert_eq!(client.list_files(REPO, "main").unwrap().len(), 2);
}

#[test]
fn a_cancelled_pull_keeps_its_bytes_for_the_next() {
    let setup = setup(llama_repo());
    setup.hub.set_trickle(Some(hub_standin::Trickle {
        fast_bytes: 200_000,
        chunk: 16 * 1024,
        interval: Duration::from_millis(20),
    }));
    let cancel = CancelToken::new();
    let request = PullRequest {
        repo: REPO.to_string(),
        revision: "main".to_string(),
        selection: Selection::File("llama-tiny-Q8_0.gguf".to_string()),
        name: Some("tiny".to_string()),
    };
    let error = pull(&setup.client, &setup.store, &request, &quick_retries(), &cancel, &mut |event| {
        if matches!(event, PullEvent::Progress { done, .. } if done >= 200_000) {
            cancel.cancel();
        }
    })
    .unwrap_err();
    assert!(matches!(error, PullError::Download(DownloadError::Cancelled { .. })), "{error}");
    assert_nothing_installed(&setup);
    setup.hub.set_trickle(None);
    let outcome =
        pull(&setup.client, &setup.store, &request, &quick_retries(), &CancelToken::new(), &mut |_| {})
            .unwrap();
    assert_eq!(outcome.model().name(), "tiny");
    let starts = setup.hub.range_starts();
    assert!(starts[1].is_some_and(|start| start >= 200_000), "{starts:?}");
}

#[test]
fn a_split_model_is_pulled_as_one() {
    let gguf = llama_gguf();
    let second_part = vec![7u8; 300_000];
    let setup = setup(vec![
        StandinFile::new("big-Q8_0-00001-of-00002.gguf", gguf.clone()),
        StandinFile::new("big-Q8_0-00002-of-00002.gguf", second_part.clone()),
    ]);
    let outcome = pull_quant(&setup, "Q8_0").unwrap();
    let model = outcome.model();
    assert_eq!(model.name(), "big-q8_0");
    assert_eq!(model.manifest.file_name, "big-Q8_0-00001-of-00002.gguf");
    assert_eq!(model.manifest.split_parts.len(), 1);
    assert_eq!(model.manifest.split_parts[0].sha256, sha256_hex(&second_part));
    assert!(model.dir.join("big-Q8_0-00002-of-00002.gguf").is_file());
    setup.store.verify(model).unwrap();
}

#[test]
fn bad_choices_are_named() {
    let setup = setup(vec![
        StandinFile::new("m-Q8_0.gguf", llama_gguf()),
        StandinFile::new("m-Q4_K_M.gguf", llama_gguf()),
    ]);
    let error = pull_quant(&setup, "Q2_K").unwrap_err();
    assert!(
        error.to_string().contains("Q4_K_M, Q8_0") || error.to_string().contains("Q8_0, Q4_K_M"),
        "{error}"
    );
    let request = PullRequest {
        repo: REPO.to_string(),
        revision: "main".to_string(),
        selection: Selection::Only,
        name: None,
    };
    let error =
        pull(&setup.client, &setup.store, &request, &quick_retries(), &CancelToken::new(), &mut |_| {})
            .unwrap_err();
    assert!(matches!(error, PullError::ChooseOne { .. }), "{error}");
    let missing = PullRequest { repo: "doppler-test/missing".to_string(), ..request };
    let error =
        pull(&setup.client, &setup.store, &missing, &quick_retries(), &CancelToken::new(), &mut |_| {})
            .unwrap_err();
    assert!(matches!(error, PullError::Hub(HubError::Gated { .. })), "{error}");
}

#[test]
fn a_name_taken_by_another_model_is_refused_before_downloading() {
    let mut other = llama_gguf();
    *other.last_mut().unwrap() ^= 1;
    let setup =
        setup(vec![StandinFile::new("m-Q8_0.gguf", llama_gguf()), StandinFile::new("m-Q4_K_M.gguf", other)]);
    let request = |quant: &str| PullRequest {
        repo: REPO.to_string(),
        revision: "main".to_string(),
        selection: Selection::Quant(quant.to_string()),
        name: Some("taken".to_string()),
    };
    let pull_as_taken = |quant| {
        pull(&setup.client, &setup.store, &request(quant), &quick_retries(), &CancelToken::new(), &mut |_| {})
    };
    pull_as_taken("Q8_0").unwrap();
    let error = pull_as_taken("Q4_K_M").unwrap_err();
    assert!(matches!(error, PullError::Store(StoreError::AlreadyInstalled { .. })), "{error}");
    assert_eq!(setup.hub.range_starts().len(), 1, "nothing was downloaded for the refused pull");
}
