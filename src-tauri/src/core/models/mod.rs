//! The model picker's side: installed models from the engine's model store with their load
//! state, loading and unloading on the worker with each model's context setting, fetching a default model, importing a file.

mod catalog;
pub mod commands;
mod context;
#[cfg(test)]
mod tests;
mod views;

pub use catalog::{CatalogError, ModelCatalog};
pub use context::ContextSetting;
pub use views::{DefaultModelView, FetchProgress, InstalledModelView, LoadEvent, ModelList};
