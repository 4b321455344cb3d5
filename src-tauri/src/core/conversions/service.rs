use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use doppler_engine::store::ModelStore;
use doppler_store::{
    convert::{convert_repo_into_store, ConvertError, ConvertEvent, HubSource, TargetQuant},
    download::{CancelToken, RetryPolicy},
    hub::{HubClient, HubConfig},
    PullEvent,
};

use super::{Conversion, ConversionStatus};

/// Progress reaches the UI at most this often.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);

type Sink = Box<dyn Fn(&Conversion) + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    #[error("the model store is unavailable: {0}")]
    StoreUnavailable(String),
    #[error("'{0}' is not a Hub repository id (owner/name)")]
    NotARepo(String),
    #[error("there is no conversion {0}")]
    NotFound(u64),
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// Runs conversions of Hub repositories into the model store, one thread each. The list lives
/// as long as the app: a conversion cut short by quitting resumes its downloads when it is
/// started again.
pub struct ConversionService {
    hub: HubConfig,
    store: Result<ModelStore, String>,
    policy: RetryPolicy,
    conversions: Mutex<Vec<Conversion>>,
    /// The running conversions' cancel tokens, by id.
    running: Mutex<HashMap<u64, CancelToken>>,
    sink: Mutex<Option<Sink>>,
}

impl ConversionService {
    pub fn new(
        hub: HubConfig,
        store: Result<ModelStore, String>,
        policy: RetryPolicy,
    ) -> Arc<ConversionService> {
        Arc::new(ConversionService {
            hub,
            store,
            policy,
            conversions: Mutex::default(),
            running: Mutex::default(),
            sink: Mutex::default(),
        })
    }

    /// Where every change of a conversion goes (the webview's channel); replaces the last one.
    pub fn watch(&self, sink: Sink) -> Vec<Conversion> {
        *self.sink.lock().expect("the sink lock is never poisoned") = Some(sink);
        self.list()
    }

    pub fn list(&self) -> Vec<Conversion> {
        self.lock().clone()
    }

    /// Starts converting `repo` to `quant` on a thread of its own, or returns the conversion of
    /// it that is already running.
    pub fn start(self: &Arc<Self>, repo: &str, quant: &str) -> Result<Conversion, ConversionError> {
        let target: TargetQuant = quant.parse()?;
        let source = HubSource::parse(repo).ok_or_else(|| ConversionError::NotARepo(repo.to_string()))?;
        self.store()?;
        let mut conversions = self.lock();
        let running = |conversion: &&Conversion| {
            conversion.repo == repo
                && conversion.quant == target.name()
                && matches!(conversion.status, ConversionStatus::Downloading | ConversionStatus::Converting)
        };
        if let Some(running) = conversions.iter().find(running) {
            return Ok(running.clone());
        }
        let conversion = Conversion {
            id: conversions.iter().map(|conversion| conversion.id).max().unwrap_or(0) + 1,
            repo: repo.to_string(),
            quant: target.name().to_string(),
            status: ConversionStatus::Downloading,
            done: 0,
            total: 0,
            model_id: None,
            message: None,
        };
        conversions.push(conversion.clone());
        let id = conversion.id;
        let cancel = CancelToken::new();
        // Registered before the list is unlocked, so a cancel can never find the conversion
        // listed but not yet cancellable.
        self.running_lock().insert(id, cancel.clone());
        drop(conversions);
        let service = self.clone();
        std::thread::Builder::new()
            .name(format!("convert-{id}"))
            .spawn(move || service.run(id, &source, target, &cancel))
            .expect("a conversion thread starts");
        Ok(conversion)
    }

    /// Asks conversion `id` to stop: it ends as `Cancelled` at its next download chunk or
    /// tensor, with nothing installed and its downloads kept (converting again resumes them).
    /// A conversion that has already ended stays as it is.
    pub fn cancel(&self, id: u64) -> Result<(), ConversionError> {
        if let Some(cancel) = self.running_lock().get(&id) {
            cancel.cancel();
            return Ok(());
        }
        if self.lock().iter().any(|conversion| conversion.id == id) {
            Ok(())
        } else {
            Err(ConversionError::NotFound(id))
        }
    }

    fn run(&self, id: u64, source: &HubSource, quant: TargetQuant, cancel: &CancelToken) {
        let mut last_emit = None;
        let result = self.store().and_then(|store| {
            let client = HubClient::new(self.hub.clone()).map_err(ConvertError::from)?;
            let mut on_event = |event| self.progress(id, event, &mut last_emit);
            Ok(convert_repo_into_store(
                &client,
                store,
                source,
                Some(quant),
                None,
                &self.policy,
                cancel,
                &mut on_event,
            )?)
        });
        self.running_lock().remove(&id);
        self.update(id, |conversion| match result {
            Ok(model) => {
                conversion.status = ConversionStatus::Done;
                conversion.done = conversion.total;
                conversion.model_id = Some(model.name().to_string());
                conversion.message = None;
            }
            // Whatever error the stop surfaced as (a download's or the conversion's own).
            Err(_) if cancel.is_cancelled() => {
                conversion.status = ConversionStatus::Cancelled;
                conversion.message = Some(
                    "Cancelled: nothing was installed; the downloaded files are kept for the next try".into(),
                );
            }
            Err(error) => {
                conversion.status = ConversionStatus::Failed;
                conversion.message = Some(error.to_string());
            }
        });
    }

    fn progress(&self, id: u64, event: ConvertEvent, last_emit: &mut Option<Instant>) {
        let mut status_changed = false;
        let due = last_emit.is_none_or(|last| last.elapsed() >= PROGRESS_INTERVAL);
        let emitted = self.update_if(id, |conversion| {
            match event {
                ConvertEvent::Download(PullEvent::Progress { done, total, .. }) => {
                    conversion.done = done;
                    conversion.total = total;
                    conversion.message = None;
                }
                ConvertEvent::Download(PullEvent::Retrying { reason, wait, .. }) => {
                    conversion.message =
                        Some(format!("{reason}; retrying in {:.0} s", wait.as_secs_f64().ceil()));
                    status_changed = true;
                }
                ConvertEvent::Download(_) => {}
                ConvertEvent::Convert(progress) => {
                    status_changed = conversion.status != ConversionStatus::Converting;
                    conversion.status = ConversionStatus::Converting;
                    conversion.done = progress.done_bytes;
                    conversion.total = progress.total_bytes;
                }
            }
            status_changed || due
        });
        if emitted {
            *last_emit = Some(Instant::now());
        }
    }

    /// Changes conversion `id` and sends it to the window.
    fn update(&self, id: u64, change: impl FnOnce(&mut Conversion)) {
        self.update_if(id, |conversion| {
            change(conversion);
            true
        });
    }

    /// Changes conversion `id`, sending it to the window when `change` says so: whether it did.
    fn update_if(&self, id: u64, change: impl FnOnce(&mut Conversion) -> bool) -> bool {
        let mut conversions = self.lock();
        let Some(conversion) = conversions.iter_mut().find(|conversion| conversion.id == id) else {
            return false;
        };
        if !change(conversion) {
            return false;
        }
        let view = conversion.clone();
        drop(conversions);
        if let Some(sink) = self.sink.lock().expect("the sink lock is never poisoned").as_ref() {
            sink(&view);
        }
        true
    }

    fn store(&self) -> Result<&ModelStore, ConversionError> {
        self.store.as_ref().map_err(|reason| ConversionError::StoreUnavailable(reason.clone()))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Conversion>> {
        self.conversions.lock().expect("the conversions lock is never poisoned")
    }

    fn running_lock(&self) -> MutexGuard<'_, HashMap<u64, CancelToken>> {
        self.running.lock().expect("the running conversions lock is never poisoned")
    }
}
