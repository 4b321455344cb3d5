//! A model's context setting without a window: saved per model, held to the bounds its
//! metadata gives, with the memory it takes, and used by the model's next load. The model is
//! the tiny random-weight Llama 3 of tests/data/hf (trained for 131072 tokens), on lavapipe.

use std::{path::PathBuf, sync::mpsc, sync::Arc};

use doppler_engine::{store::ModelStore, EngineOptions, ModelInfo};

use super::ModelCatalog;
use crate::core::{
    app::AppSettings,
    engine::{EngineWorker, LoadFailure, LoadObserver, MAX_WAITING_REPLIES},
    storage::Database,
};

const MODEL: &str = "tiny-llama3";

/// Hands a load's end to the test.
struct LoadResult(mpsc::Sender<Result<ModelInfo, LoadFailure>>);

impl LoadObserver for LoadResult {
    fn progress(&mut self, _fraction: f32, _stage: &str) {}

    fn finished(self: Box<Self>, result: Result<ModelInfo, LoadFailure>) {
        let _ = self.0.send(result);
    }
}

#[test]
fn a_models_context_is_saved_held_to_its_metadata_and_used_by_its_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db.sqlite3")).unwrap().database;
    let store = ModelStore::open(dir.path().join("models")).unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/hf/llama3/model.gguf");
    store.install_file(MODEL, &fixture, None).unwrap();
    let worker = Arc::new(EngineWorker::spawn(EngineOptions::default(), MAX_WAITING_REPLIES));
    let catalog = ModelCatalog::new(Ok(store), worker);

    let default = catalog.context_setting(&db, MODEL).unwrap();
    assert_eq!((default.chosen, default.max_len, default.default_len), (None, 131072, 8192));
    assert_eq!(default.context_len, 8192);

    // Past the model's training context, or below the smallest useful one: held to the bounds.
    let longest = catalog.set_context(&db, MODEL, Some(1 << 30)).unwrap();
    assert_eq!((longest.chosen, longest.context_len), (Some(131072), 131072));
    assert_eq!(catalog.set_context(&db, MODEL, Some(3)).unwrap().context_len, default.min_len);
    // The KV cache is sized to the choice.
    let chosen = catalog.set_context(&db, MODEL, Some(300)).unwrap();
    assert_eq!(chosen.context_len, 300);
    assert_eq!(chosen.footprint.weights, longest.footprint.weights);
    assert_eq!(chosen.footprint.kv_cache * 131072, longest.footprint.kv_cache * 300);

    // Saved with the app's settings, per model: read again as at the next start.
    assert_eq!(AppSettings::load(&db).unwrap().model_contexts.get(MODEL), Some(&300));
    assert_eq!(catalog.context_setting(&db, MODEL).unwrap().chosen, Some(300));

    // The load uses it.
    let (sender, loaded) = mpsc::channel();
    catalog.load(&db, MODEL, Box::new(LoadResult(sender))).unwrap();
    let info = loaded.recv().unwrap().expect("the model loads");
    assert_eq!(info.context_len, 300);
    // What the setting showed before the device was open is what the engine allocated, or more
    // (it counts the f16 prefill products and their larger batch, which this adapter may lack);
    // once the device is open it is exactly that.
    assert_eq!(
        (info.footprint.weights, info.footprint.kv_cache),
        (chosen.footprint.weights, chosen.footprint.kv_cache)
    );
    assert!(info.footprint.scratch <= chosen.footprint.scratch);
    assert_eq!(catalog.context_setting(&db, MODEL).unwrap().footprint, info.footprint);

    // `None` goes back to the default.
    let reset = catalog.set_context(&db, MODEL, None).unwrap();
    assert_eq!((reset.chosen, reset.context_len), (None, 8192));
    assert!(AppSettings::load(&db).unwrap().model_contexts.is_empty());
}
