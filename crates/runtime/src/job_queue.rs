use std::{
    collections::VecDeque,
    sync::{Condvar, Mutex, MutexGuard},
};

use doppler_engine::CancelToken;
use serde::Serialize;

use super::requests::{GenerationObserver, GenerationRequest, LoadObserver, LoadRequest};

pub type GenerationId = u64;

/// Work for the engine worker, run in order.
pub(super) enum Job<K> {
    Load {
        request: LoadRequest,
        cancel: CancelToken,
        observer: Box<dyn LoadObserver>,
    },
    Unload {
        model_id: String,
        done: Box<dyn FnOnce() + Send>,
    },
    Generate(GenerationJob<K>),
    /// Tests only: a GPU fault, injected between jobs.
    #[cfg(feature = "fault-injection")]
    InjectFault(crate::InjectedFault),
}

pub(super) struct GenerationJob<K> {
    pub id: GenerationId,
    pub request: GenerationRequest<K>,
    pub cancel: CancelToken,
    pub observer: Box<dyn GenerationObserver>,
}

/// A generation as callers see it in the queue. Serialized, the fields of the key (a struct
/// or a map) join `generationId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedGeneration<K> {
    pub generation_id: GenerationId,
    #[serde(flatten)]
    pub key: K,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueView<K> {
    pub running: Option<QueuedGeneration<K>>,
    /// In the order they will run.
    pub waiting: Vec<QueuedGeneration<K>>,
}

/// A generation refused because `capacity` generations are already waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{capacity} generations are already waiting; try again when one has finished")]
pub struct QueueFull {
    pub capacity: usize,
}

/// Why a job was not queued; the job comes back with it.
pub(super) enum Refused<K> {
    Closed(Box<Job<K>>),
    /// Only ever a generation.
    Full(Box<Job<K>>, QueueFull),
}

/// The worker's queue: waiting jobs, the job running now, and cancellation of both.
pub(super) struct JobQueue<K> {
    state: Mutex<QueueState<K>>,
    wake: Condvar,
    /// Waiting generations at most: loads and unloads are not counted, as callers ask for
    /// them one at a time, while generations come from every client at once.
    capacity: usize,
}

struct QueueState<K> {
    jobs: VecDeque<Job<K>>,
    running: Option<Running<K>>,
    closed: bool,
}

/// The job the worker runs now, with what stops it.
enum Running<K> {
    Generation {
        generation: QueuedGeneration<K>,
        owner: String,
        cancel: CancelToken,
    },
    Load {
        model_id: String,
        cancel: CancelToken,
    },
    /// An unload (or a test's fault), which nothing stops.
    Other,
}

impl<K> Running<K> {
    fn cancel(&self) {
        match self {
            Running::Generation { cancel, .. } | Running::Load { cancel, .. } => cancel.cancel(),
            Running::Other => {}
        }
    }
}

impl<K: Clone> JobQueue<K> {
    pub fn new(capacity: usize) -> JobQueue<K> {
        let state = QueueState { jobs: VecDeque::new(), running: None, closed: false };
        JobQueue { state: Mutex::new(state), wake: Condvar::new(), capacity }
    }

    /// Adds a job at the back; a closed queue hands the job back, a full one refuses a generation.
    pub fn push(&self, job: Job<K>) -> Result<(), Refused<K>> {
        let mut state = self.lock();
        if state.closed {
            return Err(Refused::Closed(Box::new(job)));
        }
        if matches!(job, Job::Generate(_)) && waiting_generations(&state.jobs) >= self.capacity {
            return Err(Refused::Full(Box::new(job), QueueFull { capacity: self.capacity }));
        }
        state.jobs.push_back(job);
        let ahead = state.jobs.len() - 1 + usize::from(state.running.is_some());
        if let Some(Job::Generate(job)) = state.jobs.back_mut() {
            if ahead > 0 {
                job.observer.queued(ahead);
            }
        }
        drop(state);
        self.wake.notify_one();
        Ok(())
    }

    /// Waits for the next job and marks it running; `None` once the queue is closed.
    pub fn next(&self) -> Option<Job<K>> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return None;
            }
            if let Some(job) = state.jobs.pop_front() {
                state.running = Some(match &job {
                    Job::Generate(generation) => Running::Generation {
                        generation: queued(generation),
                        owner: generation.request.owner.clone(),
                        cancel: generation.cancel.clone(),
                    },
                    Job::Load { request, cancel, .. } => {
                        Running::Load { model_id: request.model_id.clone(), cancel: cancel.clone() }
                    }
                    _ => Running::Other,
                });
                announce_positions(&mut state);
                return Some(job);
            }
            state = self.wake.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// The running job is done.
    pub fn finish_running(&self) {
        let mut state = self.lock();
        state.running = None;
    }

    /// Stops the generation `id`: a running one ends after its current step and keeps what
    /// it generated; a waiting one leaves the queue and is returned to be told so.
    pub fn cancel(&self, id: GenerationId) -> Option<GenerationJob<K>> {
        self.cancel_where(|generation, _| generation.generation_id == id).pop()
    }

    /// Stops every generation the window `owner` asked for.
    pub fn cancel_owned_by(&self, owner: &str) -> Vec<GenerationJob<K>> {
        self.cancel_where(|_, job_owner| job_owner == owner)
    }

    fn cancel_where(&self, matches: impl Fn(&QueuedGeneration<K>, &str) -> bool) -> Vec<GenerationJob<K>> {
        let mut state = self.lock();
        if let Some(Running::Generation { generation, owner, cancel }) = &state.running {
            if matches(generation, owner) {
                cancel.cancel();
            }
        }
        let mut removed = Vec::new();
        let mut kept = VecDeque::with_capacity(state.jobs.len());
        for job in state.jobs.drain(..) {
            match job {
                Job::Generate(generation) if matches(&queued(&generation), &generation.request.owner) => {
                    removed.push(generation)
                }
                other => kept.push_back(other),
            }
        }
        state.jobs = kept;
        if !removed.is_empty() {
            announce_positions(&mut state);
        }
        removed
    }

    /// Stops loading `model_id`: a running load ends after its current tensor; waiting loads
    /// of it leave the queue and are returned to be told so.
    pub fn cancel_load(&self, model_id: &str) -> Vec<Job<K>> {
        let mut state = self.lock();
        if let Some(Running::Load { model_id: loading, cancel }) = &state.running {
            if loading == model_id {
                cancel.cancel();
            }
        }
        let (removed, kept): (Vec<_>, Vec<_>) = state
            .jobs
            .drain(..)
            .partition(|job| matches!(job, Job::Load { request, .. } if request.model_id == model_id));
        state.jobs = kept.into();
        if !removed.is_empty() {
            announce_positions(&mut state);
        }
        removed
    }

    /// Refuses new jobs, cancels the running generation or load and returns the waiting jobs.
    pub fn close(&self) -> Vec<Job<K>> {
        let mut state = self.lock();
        state.closed = true;
        if let Some(running) = &state.running {
            running.cancel();
        }
        let waiting = state.jobs.drain(..).collect();
        drop(state);
        self.wake.notify_all();
        waiting
    }

    pub fn view(&self) -> QueueView<K> {
        let state = self.lock();
        let waiting = state
            .jobs
            .iter()
            .filter_map(|job| match job {
                Job::Generate(generation) => Some(queued(generation)),
                _ => None,
            })
            .collect();
        let running = match &state.running {
            Some(Running::Generation { generation, .. }) => Some(generation.clone()),
            _ => None,
        };
        QueueView { running, waiting }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState<K>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn queued<K: Clone>(job: &GenerationJob<K>) -> QueuedGeneration<K> {
    QueuedGeneration { generation_id: job.id, key: job.request.key.clone() }
}

fn waiting_generations<K>(jobs: &VecDeque<Job<K>>) -> usize {
    jobs.iter().filter(|job| matches!(job, Job::Generate(_))).count()
}

/// Tells each waiting generation how many jobs run before it.
fn announce_positions<K>(state: &mut QueueState<K>) {
    let busy = usize::from(state.running.is_some());
    for (index, job) in state.jobs.iter_mut().enumerate() {
        if let Job::Generate(generation) = job {
            generation.observer.queued(index + busy);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use doppler_engine::GenerateOptions;

    use super::*;
    use crate::{requests::Prompt, GenerationOutcome};

    /// Records the places in the queue a generation was told.
    struct Places(Arc<Mutex<Vec<usize>>>);

    impl GenerationObserver for Places {
        fn queued(&mut self, ahead: usize) {
            self.0.lock().unwrap().push(ahead);
        }
        fn started(&mut self) {}
        fn token(&mut self, _text: &str) {}
        fn finished(self: Box<Self>, _outcome: GenerationOutcome) {}
    }

    fn generation(id: GenerationId, owner: &str) -> (Job<&'static str>, Arc<Mutex<Vec<usize>>>) {
        let places = Arc::new(Mutex::new(Vec::new()));
        let request = GenerationRequest {
            model_id: "m".into(),
            owner: owner.into(),
            key: "request",
            prompt: Prompt::Text("hi".into()),
            options: GenerateOptions::default(),
        };
        let observer = Box::new(Places(places.clone()));
        (Job::Generate(GenerationJob { id, request, cancel: CancelToken::new(), observer }), places)
    }

    fn ids(queue: &JobQueue<&'static str>) -> Vec<GenerationId> {
        queue.view().waiting.iter().map(|waiting| waiting.generation_id).collect()
    }

    #[test]
    fn generations_run_first_in_first_out() {
        let queue = JobQueue::new(8);
        for id in 1..=3 {
            assert!(queue.push(generation(id, "a").0).is_ok());
        }
        assert_eq!(ids(&queue), [1, 2, 3]);
        assert!(matches!(queue.next(), Some(Job::Generate(job)) if job.id == 1));
        assert_eq!(queue.view().running.map(|running| running.generation_id), Some(1));
        assert_eq!(ids(&queue), [2, 3]);
    }

    #[test]
    fn a_full_queue_refuses_generations_but_not_loads() {
        let queue = JobQueue::new(2);
        assert!(queue.push(generation(1, "a").0).is_ok());
        assert!(queue.push(generation(2, "a").0).is_ok());
        match queue.push(generation(3, "a").0) {
            Err(Refused::Full(job, full)) => {
                assert_eq!(full, QueueFull { capacity: 2 });
                assert!(matches!(*job, Job::Generate(ref job) if job.id == 3), "the job comes back");
            }
            _ => panic!("a third generation must be refused"),
        }
        let unload = Job::Unload { model_id: "m".into(), done: Box::new(|| ()) };
        assert!(queue.push(unload).is_ok(), "loads and unloads are not held back");
        assert_eq!(ids(&queue), [1, 2]);

        // The running one does not count: once one starts, another may wait.
        queue.next();
        assert!(queue.push(generation(4, "a").0).is_ok());
        assert_eq!(ids(&queue), [2, 4]);
    }

    #[test]
    fn cancelling_removes_waiting_generations_and_moves_the_rest_up() {
        let queue = JobQueue::new(8);
        let (first, _) = generation(1, "window");
        queue.push(first).ok();
        let running = match queue.next() {
            Some(Job::Generate(job)) => job.cancel,
            _ => panic!("the first generation runs"),
        };
        let (second, _) = generation(2, "client");
        let (third, third_places) = generation(3, "window");
        queue.push(second).ok();
        queue.push(third).ok();
        assert_eq!(*third_places.lock().unwrap(), [2]);

        let removed = queue.cancel(2).expect("a waiting generation leaves the queue");
        assert_eq!(removed.id, 2);
        assert_eq!(*third_places.lock().unwrap(), [2, 1], "told it moved up");

        let removed = queue.cancel_owned_by("window");
        assert_eq!(removed.iter().map(|job| job.id).collect::<Vec<_>>(), [3]);
        assert!(running.is_cancelled(), "the running one of the owner is stopped too");
        assert!(ids(&queue).is_empty());
    }

    #[test]
    fn a_closed_queue_hands_jobs_back() {
        let queue = JobQueue::new(8);
        queue.push(generation(1, "a").0).ok();
        assert_eq!(queue.close().len(), 1);
        assert!(matches!(queue.push(generation(2, "a").0), Err(Refused::Closed(_))));
        assert!(queue.next().is_none());
    }
}
