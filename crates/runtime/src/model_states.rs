use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

use doppler_engine::ModelInfo;
use serde::Serialize;

/// Where a model is on its way to the GPU, as the model picker shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum ModelState {
    /// Waiting for the worker.
    Queued,
    Loading {
        fraction: f32,
        stage: String,
    },
    Loaded {
        info: ModelInfo,
    },
    Failed {
        reason: String,
    },
    Unloading,
}

/// The state of every model the worker was asked about; absent means not loaded.
#[derive(Default)]
pub(crate) struct ModelStates(Mutex<HashMap<String, ModelState>>);

impl ModelStates {
    pub fn set(&self, model_id: &str, state: ModelState) {
        self.lock().insert(model_id.to_string(), state);
    }

    pub fn remove(&self, model_id: &str) {
        self.lock().remove(model_id);
    }

    pub fn snapshot(&self) -> HashMap<String, ModelState> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, ModelState>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
