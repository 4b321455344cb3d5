use std::{
    collections::HashMap,
    path::PathBuf,
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
use crate::core::downloads::SavedList;

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
    #[error("conversion {0} is not cancelled or failed: only those resume")]
    NotResumable(u64),
    #[error("conversion {0} is still running: cancel it first")]
    StillRunning(u64),
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// What a change of a conversion asks for.
#[derive(PartialEq)]
enum Report {
    Nothing,
    /// Sent to the window.
    Progress,
    /// Sent to the window and saved: a restart must know it.
    StatusChange,
}

/// Runs conversions of Hub repositories into the model store, one thread each. The list is
/// kept in a JSON file as the downloads' is, so that conversions that were running when the
/// app ended go on (their downloads resuming from the bytes on disk) when it starts again.
pub struct ConversionService {
    hub: HubConfig,
    store: Result<ModelStore, String>,
    list: SavedList,
    policy: RetryPolicy,
    conversions: Mutex<Vec<Conversion>>,
    /// The running conversions' cancel tokens, by id.
    running: Mutex<HashMap<u64, CancelToken>>,
    sink: Mutex<Option<Sink>>,
}

impl ConversionService {
    /// Reads the list a previous run left at `list_path`; call `resume_interrupted` to go on
    /// with the conversions it was running.
    pub fn new(
        hub: HubConfig,
        store: Result<ModelStore, String>,
        list_path: PathBuf,
        policy: RetryPolicy,
    ) -> Arc<ConversionService> {
        let list = SavedList::new(list_path);
        let conversions = list.read();
        Arc::new(ConversionService {
            hub,
            store,
            list,
            policy,
            conversions: Mutex::new(conversions),
            running: Mutex::default(),
            sink: Mutex::default(),
        })
    }

    /// Restarts the conversions the last run left running (it quit or was killed): files it
    /// finished downloading are kept, a partial one resumes with a Range request, and a
    /// conversion cut short while converting converts again from the downloaded files.
    pub fn resume_interrupted(self: &Arc<Self>) {
        let mut conversions = self.lock();
        for index in 0..conversions.len() {
            if !conversions[index].status.is_active() {
                continue;
            }
            let conversion = &mut conversions[index];
            conversion.status = ConversionStatus::Downloading;
            conversion.message = Some("Resuming where the last run stopped".into());
            let id = conversion.id;
            self.spawn(&mut conversions, id);
        }
        self.list.write(&conversions);
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
    /// it that is already running. It takes the place of an earlier cancelled or failed one.
    pub fn start(self: &Arc<Self>, repo: &str, quant: &str) -> Result<Conversion, ConversionError> {
        let target: TargetQuant = quant.parse()?;
        HubSource::parse(repo).ok_or_else(|| ConversionError::NotARepo(repo.to_string()))?;
        self.store()?;
        let mut conversions = self.lock();
        let same = |conversion: &Conversion| conversion.repo == repo && conversion.quant == target.name();
        if let Some(running) =
            conversions.iter().find(|conversion| same(conversion) && conversion.status.is_active())
        {
            return Ok(running.clone());
        }
        // Before the conversions it replaces leave: a new id, never one the UI still shows.
        let id = conversions.iter().map(|conversion| conversion.id).max().unwrap_or(0) + 1;
        conversions.retain(|conversion| !same(conversion) || conversion.status == ConversionStatus::Done);
        let conversion = Conversion {
            id,
            repo: repo.to_string(),
            quant: target.name().to_string(),
            status: ConversionStatus::Downloading,
            done: 0,
            total: 0,
            model_id: None,
            message: None,
        };
        conversions.push(conversion.clone());
        self.list.write(&conversions);
        self.spawn(&mut conversions, id);
        Ok(conversion)
    }

    /// Goes on with a cancelled or failed conversion from the files it downloaded.
    pub fn resume(self: &Arc<Self>, id: u64) -> Result<Conversion, ConversionError> {
        let mut conversions = self.lock();
        let conversion = find(&mut conversions, id)?;
        if !matches!(conversion.status, ConversionStatus::Cancelled | ConversionStatus::Failed) {
            return Err(ConversionError::NotResumable(id));
        }
        conversion.status = ConversionStatus::Downloading;
        conversion.message = None;
        let resumed = conversion.clone();
        self.list.write(&conversions);
        self.spawn(&mut conversions, id);
        drop(conversions);
        self.emit(&resumed);
        Ok(resumed)
    }

    /// Asks conversion `id` to stop: it ends as `Cancelled` at its next download chunk or
    /// tensor, with nothing installed and its downloads kept (`resume` goes on from them).
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

    /// Takes an ended conversion off the list (its downloaded files stay until a conversion
    /// of the repository installs a model).
    pub fn dismiss(&self, id: u64) -> Result<(), ConversionError> {
        let mut conversions = self.lock();
        if find(&mut conversions, id)?.status.is_active() {
            return Err(ConversionError::StillRunning(id));
        }
        conversions.retain(|conversion| conversion.id != id);
        self.list.write(&conversions);
        Ok(())
    }

    /// Runs conversion `id` on a thread of its own. Its cancel token is registered while the
    /// list is locked, so a cancel can never find the conversion running but not cancellable.
    fn spawn(self: &Arc<Self>, conversions: &mut [Conversion], id: u64) {
        let Ok(conversion) = find(conversions, id) else { return };
        let job = HubSource::parse(&conversion.repo)
            .ok_or_else(|| ConversionError::NotARepo(conversion.repo.clone()))
            .and_then(|source| Ok((source, conversion.quant.parse::<TargetQuant>()?)));
        let (source, target) = match job {
            Ok(job) => job,
            // Only an edited list gets here: `start` checked both.
            Err(error) => {
                conversion.status = ConversionStatus::Failed;
                conversion.message = Some(error.to_string());
                return;
            }
        };
        let cancel = CancelToken::new();
        self.running_lock().insert(id, cancel.clone());
        let service = self.clone();
        std::thread::Builder::new()
            .name(format!("convert-{id}"))
            .spawn(move || service.run(id, &source, target, &cancel))
            .expect("a conversion thread starts");
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
        self.update(id, |conversion| {
            match result {
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
                        "Cancelled: nothing was installed; the downloaded files are kept for the next try"
                            .into(),
                    );
                }
                Err(error) => {
                    conversion.status = ConversionStatus::Failed;
                    conversion.message = Some(error.to_string());
                }
            }
            Report::StatusChange
        });
    }

    fn progress(&self, id: u64, event: ConvertEvent, last_emit: &mut Option<Instant>) {
        let due = last_emit.is_none_or(|last| last.elapsed() >= PROGRESS_INTERVAL);
        let on_time = if due { Report::Progress } else { Report::Nothing };
        let emitted = self.update(id, |conversion| match event {
            ConvertEvent::Download(PullEvent::Progress { done, total, .. }) => {
                conversion.done = done;
                conversion.total = total;
                conversion.message = None;
                on_time
            }
            ConvertEvent::Download(PullEvent::Retrying { reason, wait, .. }) => {
                conversion.message =
                    Some(format!("{reason}; retrying in {:.0} s", wait.as_secs_f64().ceil()));
                Report::Progress
            }
            ConvertEvent::Download(_) => Report::Nothing,
            ConvertEvent::Convert(progress) => {
                let started = conversion.status != ConversionStatus::Converting;
                conversion.status = ConversionStatus::Converting;
                conversion.done = progress.done_bytes;
                conversion.total = progress.total_bytes;
                if started {
                    conversion.message = None;
                    Report::StatusChange
                } else {
                    on_time
                }
            }
        });
        if emitted {
            *last_emit = Some(Instant::now());
        }
    }

    /// Changes conversion `id`; sends it to the window and saves the list as `change` reports.
    /// Whether it was sent.
    fn update(&self, id: u64, change: impl FnOnce(&mut Conversion) -> Report) -> bool {
        let mut conversions = self.lock();
        let Ok(conversion) = find(&mut conversions, id) else { return false };
        let report = change(conversion);
        if report == Report::Nothing {
            return false;
        }
        let view = conversion.clone();
        if report == Report::StatusChange {
            self.list.write(&conversions);
        }
        drop(conversions);
        self.emit(&view);
        true
    }

    fn emit(&self, conversion: &Conversion) {
        if let Some(sink) = self.sink.lock().expect("the sink lock is never poisoned").as_ref() {
            sink(conversion);
        }
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

fn find(conversions: &mut [Conversion], id: u64) -> Result<&mut Conversion, ConversionError> {
    conversions.iter_mut().find(|conversion| conversion.id == id).ok_or(ConversionError::NotFound(id))
}
