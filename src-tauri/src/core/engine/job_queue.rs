use std::{
    collections::VecDeque,
    sync::{Condvar, Mutex, MutexGuard},
};

use doppler_engine::CancelToken;
use serde::Serialize;

use super::requests::{GenerationObserver, GenerationRequest, LoadObserver, LoadRequest};
use crate::core::storage::ConversationId;

pub type GenerationId = u64;

/// Work for the engine worker, run in order.
pub(super) enum Job {
    Load { request: LoadRequest, observer: Box<dyn LoadObserver> },
    Unload { model_id: String, done: Box<dyn FnOnce() + Send> },
    Generate(GenerationJob),
}

pub(super) struct GenerationJob {
    pub id: GenerationId,
    pub request: GenerationRequest,
    pub cancel: CancelToken,
    pub observer: Box<dyn GenerationObserver>,
}

/// A generation as the UI sees it in the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedGeneration {
    pub generation_id: GenerationId,
    pub conversation_id: ConversationId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueView {
    pub running: Option<QueuedGeneration>,
    /// In the order they will run.
    pub waiting: Vec<QueuedGeneration>,
}

/// The worker's queue: waiting jobs, the generation running now, and cancellation of both.
#[derive(Default)]
pub(super) struct JobQueue {
    state: Mutex<QueueState>,
    wake: Condvar,
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Job>,
    /// A job is running (a load, an unload or a generation).
    busy: bool,
    running: Option<RunningGeneration>,
    closed: bool,
}

struct RunningGeneration {
    generation: QueuedGeneration,
    owner: String,
    cancel: CancelToken,
}

impl JobQueue {
    /// Adds a job at the back; a closed queue hands the job back.
    pub fn push(&self, job: Job) -> Result<(), Box<Job>> {
        let mut state = self.lock();
        if state.closed {
            return Err(Box::new(job));
        }
        state.jobs.push_back(job);
        let ahead = state.jobs.len() - 1 + usize::from(state.busy);
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
    pub fn next(&self) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return None;
            }
            if let Some(job) = state.jobs.pop_front() {
                state.busy = true;
                if let Job::Generate(generation) = &job {
                    state.running = Some(RunningGeneration {
                        generation: queued(generation),
                        owner: generation.request.owner.clone(),
                        cancel: generation.cancel.clone(),
                    });
                }
                announce_positions(&mut state);
                return Some(job);
            }
            state = self.wake.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// The running job is done.
    pub fn finish_running(&self) {
        let mut state = self.lock();
        state.busy = false;
        state.running = None;
    }

    /// Stops the generation `id`: a running one ends after its current step and keeps what
    /// it generated; a waiting one leaves the queue and is returned to be told so.
    pub fn cancel(&self, id: GenerationId) -> Option<GenerationJob> {
        self.cancel_where(|generation, _| generation.generation_id == id).pop()
    }

    /// Stops every generation the window `owner` asked for.
    pub fn cancel_owned_by(&self, owner: &str) -> Vec<GenerationJob> {
        self.cancel_where(|_, job_owner| job_owner == owner)
    }

    fn cancel_where(&self, matches: impl Fn(&QueuedGeneration, &str) -> bool) -> Vec<GenerationJob> {
        let mut state = self.lock();
        if let Some(running) = &state.running {
            if matches(&running.generation, &running.owner) {
                running.cancel.cancel();
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

    /// Refuses new jobs, cancels the running generation and returns the waiting jobs.
    pub fn close(&self) -> Vec<Job> {
        let mut state = self.lock();
        state.closed = true;
        if let Some(running) = &state.running {
            running.cancel.cancel();
        }
        let waiting = state.jobs.drain(..).collect();
        drop(state);
        self.wake.notify_all();
        waiting
    }

    pub fn view(&self) -> QueueView {
        let state = self.lock();
        let waiting = state
            .jobs
            .iter()
            .filter_map(|job| match job {
                Job::Generate(generation) => Some(queued(generation)),
                _ => None,
            })
            .collect();
        QueueView { running: state.running.as_ref().map(|running| running.generation.clone()), waiting }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn queued(job: &GenerationJob) -> QueuedGeneration {
    QueuedGeneration { generation_id: job.id, conversation_id: job.request.conversation_id }
}

/// Tells each waiting generation how many jobs run before it.
fn announce_positions(state: &mut QueueState) {
    let busy = usize::from(state.busy);
    for (index, job) in state.jobs.iter_mut().enumerate() {
        if let Job::Generate(generation) = job {
            generation.observer.queued(index + busy);
        }
    }
}
