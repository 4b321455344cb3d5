use std::{
    collections::HashMap,
    panic::{self, AssertUnwindSafe},
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc, Arc, Mutex,
    },
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use doppler_engine::{
    gpu::GpuContext, model::ModelError, tokenizer::encode_chat, CancelToken, Engine, EngineOptions,
    GenerateError, LoadOptions, ModelInfo,
};

use super::{
    job_queue::{GenerationId, GenerationJob, Job, JobQueue, QueueFull, QueueView, Refused},
    model_states::{ModelState, ModelStates},
    requests::{
        GenerationFailure, GenerationObserver, GenerationOutcome, GenerationRequest, LoadFailure,
        LoadObserver, LoadRequest, Prompt,
    },
    session_pool::{SessionPool, DEFAULT_SESSIONS_PER_MODEL},
};

/// The handle callers keep: queues work for the worker thread, which owns the GPU.
/// `K` is the callers' key for a generation (a conversation id, a request id).
pub struct EngineWorker<K> {
    queue: Arc<JobQueue<K>>,
    states: Arc<ModelStates>,
    gpu: Arc<Mutex<Option<Arc<GpuContext>>>>,
    next_generation: AtomicU64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<K: Clone + Send + 'static> EngineWorker<K> {
    /// Starts the worker thread; it opens the GPU when the first model loads. At most
    /// `max_waiting` generations wait behind the running job; more are refused.
    pub fn spawn(options: EngineOptions, max_waiting: usize) -> EngineWorker<K> {
        let queue = Arc::new(JobQueue::new(max_waiting));
        let states = Arc::new(ModelStates::default());
        let gpu = Arc::new(Mutex::new(None));
        let thread = WorkerThread {
            options,
            engine: None,
            sessions: HashMap::new(),
            lost: HashMap::new(),
            states: states.clone(),
            gpu: gpu.clone(),
        };
        let worker_queue = queue.clone();
        let handle = thread::Builder::new()
            .name("engine-worker".to_string())
            .spawn(move || thread.run(&worker_queue))
            .expect("the OS can start the engine worker thread");
        EngineWorker {
            queue,
            states,
            gpu,
            next_generation: AtomicU64::new(1),
            thread: Mutex::new(Some(handle)),
        }
    }

    /// Loads a model file and keeps it on the GPU under `request.model_id`.
    pub fn load(&self, request: LoadRequest, observer: Box<dyn LoadObserver>) {
        self.states.set(&request.model_id, ModelState::Queued);
        self.submit_control(Job::Load { request, cancel: CancelToken::new(), observer });
    }

    /// Loads a model and waits for the worker to finish it (or refuse it).
    pub fn load_and_wait(&self, request: LoadRequest) -> Result<ModelInfo, LoadFailure> {
        let (sender, result) = mpsc::channel();
        self.load(request, Box::new(LoadResult(sender)));
        // The worker always reports a load's end, so the channel closes only if it panicked.
        result.recv().unwrap_or(Err(LoadFailure::ShuttingDown))
    }

    /// Stops loading `model_id`, running or waiting; its observer hears
    /// [`LoadFailure::Cancelled`]. A model already loaded stays (unload frees it).
    pub fn cancel_load(&self, model_id: &str) {
        for job in self.queue.cancel_load(model_id) {
            if let Job::Load { request, observer, .. } = job {
                self.states.remove(&request.model_id);
                observer.finished(Err(LoadFailure::Cancelled));
            }
        }
    }

    /// Frees a loaded model once the jobs queued before this are done; `done` runs then.
    pub fn unload(&self, model_id: String, done: Box<dyn FnOnce() + Send>) {
        self.states.set(&model_id, ModelState::Unloading);
        self.submit_control(Job::Unload { model_id, done });
    }

    /// Queues a generation at the back; the observer hears of its place in the queue, its
    /// tokens and its end. A full queue refuses it at once, without a word to the observer.
    pub fn generate(
        &self,
        request: GenerationRequest<K>,
        observer: Box<dyn GenerationObserver>,
    ) -> Result<GenerationId, QueueFull> {
        let id = self.next_generation.fetch_add(1, Ordering::Relaxed);
        match self.queue.push(Job::Generate(GenerationJob {
            id,
            request,
            cancel: CancelToken::new(),
            observer,
        })) {
            Ok(()) => Ok(id),
            Err(Refused::Closed(job)) => {
                self.refuse(*job);
                Ok(id)
            }
            Err(Refused::Full(_, full)) => Err(full),
        }
    }

    /// Queues a load or an unload (the bound on waiting generations does not hold them back);
    /// once the worker is shutting down, the job is refused instead.
    fn submit_control(&self, job: Job<K>) {
        if let Err(Refused::Closed(job) | Refused::Full(job, _)) = self.queue.push(job) {
            self.refuse(*job);
        }
    }

    /// Tells a job's observer it will not run (it was waiting, or came after shutdown).
    fn refuse(&self, job: Job<K>) {
        match job {
            Job::Generate(job) => job.observer.finished(GenerationOutcome::CancelledWhileQueued),
            Job::Load { request, observer, .. } => {
                self.states.remove(&request.model_id);
                observer.finished(Err(LoadFailure::ShuttingDown));
            }
            Job::Unload { done, .. } => done(),
            #[cfg(feature = "fault-injection")]
            Job::InjectFault(_) => {}
        }
    }

    /// Tests only: injects `fault` once the jobs queued before it are done.
    #[cfg(feature = "fault-injection")]
    pub fn inject_fault(&self, fault: crate::InjectedFault) {
        self.submit_control(Job::InjectFault(fault));
    }

    /// Stops a generation; returns whether it was running or waiting.
    pub fn cancel(&self, id: GenerationId) -> bool {
        let running = self.queue.view().running.is_some_and(|running| running.generation_id == id);
        match self.queue.cancel(id) {
            Some(job) => {
                self.refuse(Job::Generate(job));
                true
            }
            None => running,
        }
    }

    /// Stops every generation `owner` asked for (its window is closing, its client went away).
    pub fn cancel_owned_by(&self, owner: &str) {
        for job in self.queue.cancel_owned_by(owner) {
            self.refuse(Job::Generate(job));
        }
    }

    pub fn queue(&self) -> QueueView<K> {
        self.queue.view()
    }

    /// The GPU the worker has open (with the first model load); `None` before that and
    /// after a lost device until the next load.
    pub fn gpu(&self) -> Option<Arc<GpuContext>> {
        self.gpu.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Models the worker was asked to load, by id; absent ones are not loaded.
    pub fn model_states(&self) -> HashMap<String, ModelState> {
        self.states.snapshot()
    }

    /// Cancels everything and waits up to `grace` for the running job to end (a stopped
    /// generation still reports what it generated, so a caller can keep it).
    pub fn shutdown(&self, grace: Duration) {
        for job in self.queue.close() {
            self.refuse(job);
        }
        let Some(handle) = self.thread.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take() else {
            return;
        };
        let deadline = Instant::now() + grace;
        while !handle.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if !handle.is_finished() {
            tracing::warn!(?grace, "the engine worker did not stop in time; leaving it");
        } else if handle.join().is_err() {
            tracing::error!("the engine worker panicked");
        }
    }
}

/// Hands a load's end to [`EngineWorker::load_and_wait`].
struct LoadResult(mpsc::Sender<Result<ModelInfo, LoadFailure>>);

impl LoadObserver for LoadResult {
    fn progress(&mut self, _fraction: f32, _stage: &str) {}

    fn finished(self: Box<Self>, result: Result<ModelInfo, LoadFailure>) {
        // The waiter may be gone: nothing to tell then.
        let _ = self.0.send(result);
    }
}

/// State owned by the worker thread.
struct WorkerThread {
    options: EngineOptions,
    engine: Option<Engine>,
    /// The sessions (each with its KV cache) of each loaded model, with the request that
    /// loaded it, to load it again on a new device.
    sessions: HashMap<String, (SessionPool, LoadRequest)>,
    /// Models that were on a device that was lost: each loads again on its next generation.
    lost: HashMap<String, LoadRequest>,
    states: Arc<ModelStates>,
    /// The device the engine has open (a new one after a loss), for callers that show it.
    gpu: Arc<Mutex<Option<Arc<GpuContext>>>>,
}

impl WorkerThread {
    fn run<K: Clone>(mut self, queue: &JobQueue<K>) {
        while let Some(job) = queue.next() {
            // A device lost while idle is found before the job that would fail on it.
            self.forget_lost_device();
            match job {
                Job::Load { request, cancel, mut observer } => {
                    let result = catch_panic(|| self.load(&request, &cancel, &mut *observer))
                        .unwrap_or_else(|message| Err(LoadFailure::Model(message)));
                    match &result {
                        Ok(info) => {
                            self.states.set(&request.model_id, ModelState::Loaded { info: info.clone() })
                        }
                        Err(LoadFailure::Cancelled) => self.states.remove(&request.model_id),
                        Err(failure) => self
                            .states
                            .set(&request.model_id, ModelState::Failed { reason: failure.to_string() }),
                    }
                    queue.finish_running();
                    observer.finished(result);
                }
                Job::Unload { model_id, done } => {
                    self.sessions.remove(&model_id);
                    self.lost.remove(&model_id);
                    self.states.remove(&model_id);
                    queue.finish_running();
                    done();
                }
                Job::Generate(GenerationJob { request, cancel, mut observer, .. }) => {
                    let outcome = catch_panic(|| self.generate(&request, &cancel, &mut *observer))
                        .unwrap_or_else(|message| {
                            // The session may be half-way through a step: drop it with its model.
                            self.sessions.remove(&request.model_id);
                            self.states.set(
                                &request.model_id,
                                ModelState::Failed { reason: format!("the engine crashed: {message}") },
                            );
                            GenerationOutcome::Failed(GenerationFailure::Crashed(message))
                        });
                    // Not running any more before anyone hears it finished: a stop that
                    // arrives after the final event must find nothing to stop.
                    queue.finish_running();
                    observer.finished(outcome);
                }
                #[cfg(feature = "fault-injection")]
                Job::InjectFault(fault) => {
                    if let Some(engine) = &self.engine {
                        engine.gpu().inject_fault(fault);
                    }
                    queue.finish_running();
                }
            }
            self.forget_lost_device();
        }
    }

    /// A lost device takes every model on it: their sessions are dropped with the engine, so
    /// the next load opens a fresh device, and each such model loads again on its next
    /// generation. The app goes on without a restart.
    fn forget_lost_device(&mut self) {
        if !self.engine.as_ref().is_some_and(|engine| engine.gpu().probe_lost()) {
            return;
        }
        tracing::error!(
            models = self.sessions.len(),
            "the GPU device was lost; its models load again on their next use"
        );
        for (model_id, (_, request)) in self.sessions.drain() {
            self.states.set(
                &model_id,
                ModelState::Failed {
                    reason: "the GPU device was lost; the model loads again on its next use".into(),
                },
            );
            self.lost.insert(model_id, request);
        }
        self.engine = None;
        *self.gpu.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }

    fn load(
        &mut self,
        request: &LoadRequest,
        cancel: &CancelToken,
        observer: &mut dyn LoadObserver,
    ) -> Result<ModelInfo, LoadFailure> {
        if let Some((pool, _)) = self.sessions.get(&request.model_id) {
            return Ok(pool.model().info().clone());
        }
        self.lost.remove(&request.model_id);
        let engine = match &self.engine {
            Some(engine) => engine,
            None => {
                let engine = Engine::new(self.options.clone())
                    .map_err(|error| LoadFailure::NoGpu(error.to_string()))?;
                *self.gpu.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) =
                    Some(engine.gpu().clone());
                self.engine.insert(engine)
            }
        };
        let states = &self.states;
        let options = LoadOptions {
            context_len: request.context_len,
            cancel: cancel.clone(),
            ..LoadOptions::default()
        };
        let model = engine
            .load_model(&request.path, options, &mut |progress| {
                states.set(
                    &request.model_id,
                    ModelState::Loading { fraction: progress.fraction, stage: progress.stage.to_string() },
                );
                observer.progress(progress.fraction, progress.stage);
            })
            .map_err(|error| match error {
                GenerateError::Model(ModelError::LoadCancelled) => LoadFailure::Cancelled,
                error => LoadFailure::Model(error.to_string()),
            })?;
        let session = model.new_session().map_err(|error| LoadFailure::Model(error.to_string()))?;
        let info = model.info().clone();
        let pool = SessionPool::new(session, DEFAULT_SESSIONS_PER_MODEL);
        self.sessions.insert(request.model_id.clone(), (pool, request.clone()));
        Ok(info)
    }

    fn generate<K>(
        &mut self,
        request: &GenerationRequest<K>,
        cancel: &CancelToken,
        observer: &mut dyn GenerationObserver,
    ) -> GenerationOutcome {
        if cancel.is_cancelled() {
            return GenerationOutcome::CancelledWhileQueued;
        }
        if let Some(load) = self.lost.get(&request.model_id).cloned() {
            // Stopping the generation stops the reload it waits for; the model stays to be
            // loaded again by the next one.
            match self.load(&load, cancel, &mut ReloadProgress) {
                Err(LoadFailure::Cancelled) => {
                    self.lost.insert(request.model_id.clone(), load);
                    return GenerationOutcome::CancelledWhileQueued;
                }
                Err(failure) => {
                    self.states.set(&request.model_id, ModelState::Failed { reason: failure.to_string() });
                    return GenerationOutcome::Failed(GenerationFailure::ReloadFailed(failure));
                }
                Ok(_) => {}
            }
            let info = self.sessions[&request.model_id].0.model().info().clone();
            self.states.set(&request.model_id, ModelState::Loaded { info });
        }
        let Some((pool, _)) = self.sessions.get_mut(&request.model_id) else {
            return GenerationOutcome::Failed(GenerationFailure::ModelNotLoaded(request.model_id.clone()));
        };
        let model = pool.model().clone();
        let tokenizer = model.tokenizer();
        let prompt = match &request.prompt {
            Prompt::Chat(messages) => {
                encode_chat(tokenizer, model.chat_template(), messages).map_err(GenerateError::from)
            }
            Prompt::Text(text) => tokenizer.encode(text, tokenizer.add_bos()).map_err(GenerateError::from),
        };
        let prompt = match prompt {
            Ok(prompt) => prompt,
            Err(error) => return GenerationOutcome::Failed(error.into()),
        };
        let session = match pool.session_for(&prompt) {
            Ok(session) => session,
            Err(error) => return GenerationOutcome::Failed(error.into()),
        };
        let sampling = observer.profile_sampling();
        let sampled =
            sampling.is_some_and(|sampling| session.sample_profiles(sampling.cadence, sampling.sink));
        observer.started();
        let mut stream = |event: doppler_engine::TokenEvent| observer.token(&event.text);
        let result = session.generate(&prompt, &request.options, cancel, &mut stream);
        if sampled {
            session.stop_sampling_profiles();
        }
        match result {
            Ok(summary) => GenerationOutcome::Finished(summary),
            Err(error) => GenerationOutcome::Failed(error.into()),
        }
    }
}

/// A reload after a lost device, heard only through the model's state.
struct ReloadProgress;

impl LoadObserver for ReloadProgress {
    fn progress(&mut self, _fraction: f32, _stage: &str) {}

    fn finished(self: Box<Self>, _result: Result<ModelInfo, LoadFailure>) {}
}

/// Runs `f`, turning a panic into its message so one bad job does not take the worker down.
fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string())
    })
}
