//! The crash-loop guard: a model file that kills the process while it loads (a driver crash,
//! memory exhausted by hostile metadata) must not be loaded again at every start. The models
//! being loaded are written down before their load is queued and crossed out when it ends, so
//! a start that still finds one knows the last run died loading it.

use super::AppSettings;
use crate::core::storage::{Database, StorageError};

const LOADING_KEY: &str = "models_loading";

/// Marks `model_id` as loading; [`load_ended`] crosses it out.
pub fn load_begins(db: &Database, model_id: &str) -> Result<(), StorageError> {
    let mut loading = models_loading(db)?;
    if !loading.iter().any(|id| id == model_id) {
        loading.push(model_id.to_string());
    }
    db.set_setting(LOADING_KEY, &loading)
}

/// The load of `model_id` ended, loaded or refused: the process survived it.
pub fn load_ended(db: &Database, model_id: &str) -> Result<(), StorageError> {
    let mut loading = models_loading(db)?;
    loading.retain(|id| id != model_id);
    db.set_setting(LOADING_KEY, &loading)
}

/// At start: the models the last run was loading when it ended without finishing the load
/// (a crash, or a quit mid-load). Each is forgotten as the model to load at start, so the
/// app does not die the same way again; the marks are cleared.
pub fn models_that_crashed_loading(db: &Database) -> Result<Vec<String>, StorageError> {
    let crashed = models_loading(db)?;
    if crashed.is_empty() {
        return Ok(crashed);
    }
    let mut settings = AppSettings::load(db)?;
    if settings.last_model_id.as_ref().is_some_and(|last| crashed.contains(last)) {
        settings.last_model_id = None;
        settings.save(db)?;
    }
    db.set_setting(LOADING_KEY, &Vec::<String>::new())?;
    Ok(crashed)
}

fn models_loading(db: &Database) -> Result<Vec<String>, StorageError> {
    Ok(db.setting(LOADING_KEY)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(dir: &tempfile::TempDir) -> Database {
        Database::open(&dir.path().join("db.sqlite3")).unwrap().database
    }

    fn remember(db: &Database, model_id: &str) {
        let settings = AppSettings { last_model_id: Some(model_id.to_string()), ..AppSettings::default() };
        settings.save(db).unwrap();
    }

    #[test]
    fn a_load_that_ended_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(&dir);
        remember(&db, "good");
        load_begins(&db, "good").unwrap();
        load_ended(&db, "good").unwrap();
        assert!(models_that_crashed_loading(&db).unwrap().is_empty());
        assert_eq!(AppSettings::load(&db).unwrap().last_model_id.as_deref(), Some("good"));
    }

    #[test]
    fn a_model_whose_load_never_ended_is_not_loaded_at_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = database(&dir);
            remember(&db, "hostile");
            load_begins(&db, "hostile").unwrap();
            // The process dies here: the database is closed without `load_ended`.
        }
        let db = database(&dir);
        assert_eq!(models_that_crashed_loading(&db).unwrap(), vec!["hostile".to_string()]);
        assert_eq!(AppSettings::load(&db).unwrap().last_model_id, None);
        // Told once: the start after that is a normal one.
        assert!(models_that_crashed_loading(&db).unwrap().is_empty());
    }

    #[test]
    fn only_the_loads_still_open_are_blamed() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(&dir);
        remember(&db, "fine");
        load_begins(&db, "fine").unwrap();
        load_begins(&db, "hostile").unwrap();
        load_begins(&db, "hostile").unwrap();
        load_ended(&db, "fine").unwrap();
        assert_eq!(models_that_crashed_loading(&db).unwrap(), vec!["hostile".to_string()]);
        assert_eq!(AppSettings::load(&db).unwrap().last_model_id.as_deref(), Some("fine"));
    }
}
