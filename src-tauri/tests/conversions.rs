//! The model manager's conversion service against a stand-in Hub on 127.0.0.1 (real sockets,
//! the real client): a safetensors repository shows as convertible, converts to the picked
//! quantization with download and conversion progress, and installs a model the store lists.

#[path = "../../tests/support/hf_folder.rs"]
mod hf_folder;
#[path = "../../tests/support/hub_standin.rs"]
mod hub_standin;

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use doppler_app::core::conversions::{Conversion, ConversionService, ConversionStatus};
use doppler_engine::store::ModelStore;
use doppler_store::{
    convert::is_convertible,
    download::RetryPolicy,
    hub::{HubClient, HubConfig},
};
use hub_standin::{HubStandin, StandinFile};

const REPO: &str = "doppler-test/Qwen2-Tiny";

fn standin() -> HubStandin {
    let folder = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf/qwen2/model.gguf");
    hf_folder::write_hf_folder(std::path::Path::new(fixture), folder.path());
    let read = |name: &str| std::fs::read(folder.path().join(name)).unwrap();
    let mut files: Vec<StandinFile> = ["config.json", "tokenizer.json", "tokenizer_config.json"]
        .into_iter()
        .map(|name| StandinFile::plain(name, read(name)))
        .collect();
    files.push(StandinFile::new("model.safetensors", read("model.safetensors")));
    let hub = HubStandin::start();
    hub.add_repo(REPO, files);
    hub
}

#[test]
fn a_safetensors_repo_converts_with_progress_into_the_store() {
    let hub = standin();
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let config = HubConfig::new(&hub.url);
    assert!(is_convertible(&HubClient::new(config.clone()).unwrap().list_files(REPO, "main").unwrap()));

    let service = ConversionService::new(config, Ok(store.clone()), RetryPolicy::default());
    let changes = Arc::new(Mutex::new(Vec::<Conversion>::new()));
    let sink = changes.clone();
    assert!(service
        .watch(Box::new(move |conversion| sink.lock().unwrap().push(conversion.clone())))
        .is_empty());
    assert!(service.start(REPO, "Q2_K").unwrap_err().to_string().contains("Q4_K_M"));
    let started = service.start(REPO, "q4_k_m").unwrap();
    assert_eq!((started.quant.as_str(), started.status), ("Q4_K_M", ConversionStatus::Downloading));
    // Asked again while it runs: the same conversion.
    assert_eq!(service.start(REPO, "Q4_K_M").unwrap().id, started.id);

    let deadline = Instant::now() + Duration::from_secs(60);
    let finished = loop {
        let last = changes.lock().unwrap().last().cloned();
        match last {
            Some(last) if matches!(last.status, ConversionStatus::Done | ConversionStatus::Failed) => {
                break last
            }
            _ => {}
        }
        assert!(Instant::now() < deadline, "the conversion did not finish: {:?}", service.list());
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(finished.status, ConversionStatus::Done, "{:?}", finished.message);
    assert_eq!(finished.model_id.as_deref(), Some("qwen2-tiny-rdrr"));
    let statuses: Vec<ConversionStatus> =
        changes.lock().unwrap().iter().map(|change| change.status).collect();
    assert!(statuses.contains(&ConversionStatus::Downloading), "{statuses:?}");
    assert!(statuses.contains(&ConversionStatus::Converting), "{statuses:?}");
    let installed = store.get("qwen2-tiny-rdrr").unwrap().expect("installed");
    assert_eq!(installed.manifest.quantization.as_deref(), Some("Q4_K_M"));
}
