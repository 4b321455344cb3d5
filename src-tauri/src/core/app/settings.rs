use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::storage::{ConversationSettings, Database, StorageError};

const SETTINGS_KEY: &str = "app";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// App-wide preferences, stored as one JSON value so new fields get their defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AppSettings {
    pub theme: Theme,
    /// The model loaded at startup: the last one the user loaded.
    pub last_model_id: Option<String>,
    /// What new conversations start with.
    pub conversation_defaults: ConversationSettings,
    /// The context each model loads with (tokens), by model id, where the user chose one.
    pub model_contexts: BTreeMap<String, u32>,
}

impl AppSettings {
    pub fn load(db: &Database) -> Result<AppSettings, StorageError> {
        Ok(db.setting(SETTINGS_KEY)?.unwrap_or_default())
    }

    pub fn save(&self, db: &Database) -> Result<(), StorageError> {
        db.set_setting(SETTINGS_KEY, self)
    }
}
