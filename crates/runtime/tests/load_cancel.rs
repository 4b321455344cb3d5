//! A load can be stopped: a running one ends after the tensor it is uploading, a waiting one
//! leaves the queue, neither leaves a state behind, and the model loads afterwards as before.
//! Lavapipe, tiny fixture.

mod support;

use std::sync::{mpsc, Arc, Mutex};

use doppler_engine::{EngineOptions, ModelInfo};
use doppler_runtime::{EngineWorker, LoadFailure, LoadObserver};
use support::{finished, fixture, generate_text};

const MODEL: &str = "llama3-fixture";
const WAITING: &str = "waiting-fixture";

type LoadResult = Result<ModelInfo, LoadFailure>;

/// Sends the load's end back to the test.
struct LoadEnd(mpsc::Sender<LoadResult>);

impl LoadObserver for LoadEnd {
    fn progress(&mut self, _fraction: f32, _stage: &str) {}
    fn finished(self: Box<Self>, result: LoadResult) {
        let _ = self.0.send(result);
    }
}

/// At the first uploaded tensor: queues a second load, cancels it while it waits, then cancels
/// the running load. Reports what the waiting load heard.
struct CancelMidUpload {
    worker: Arc<EngineWorker<u32>>,
    end: mpsc::Sender<LoadResult>,
    waiting_end: Arc<Mutex<Option<mpsc::Receiver<LoadResult>>>>,
}

impl LoadObserver for CancelMidUpload {
    fn progress(&mut self, fraction: f32, stage: &str) {
        if stage != "uploading weights" || fraction >= 1.0 {
            return;
        }
        let mut waiting_end = self.waiting_end.lock().unwrap();
        if waiting_end.is_some() {
            return;
        }
        let (sender, receiver) = mpsc::channel();
        self.worker.load(fixture(WAITING, 128), Box::new(LoadEnd(sender)));
        self.worker.cancel_load(WAITING);
        *waiting_end = Some(receiver);
        self.worker.cancel_load(MODEL);
    }

    fn finished(self: Box<Self>, result: LoadResult) {
        let _ = self.end.send(result);
    }
}

#[test]
fn a_cancelled_load_stops_between_tensors_and_the_model_loads_afterwards() {
    let worker = Arc::new(EngineWorker::<u32>::spawn(EngineOptions::default(), 4));
    let (end, result) = mpsc::channel();
    let waiting_end = Arc::new(Mutex::new(None));
    let observer = CancelMidUpload { worker: worker.clone(), end, waiting_end: waiting_end.clone() };
    worker.load(fixture(MODEL, 128), Box::new(observer));

    let outcome = result.recv().expect("the worker reports the load's end");
    assert!(matches!(outcome, Err(LoadFailure::Cancelled)), "the running load stops: {outcome:?}");
    let waiting = waiting_end.lock().unwrap().take().expect("the upload reported progress");
    let waiting = waiting.try_recv().expect("a waiting load hears at once that it was cancelled");
    assert!(matches!(waiting, Err(LoadFailure::Cancelled)), "{waiting:?}");
    let states = worker.model_states();
    assert!(states.is_empty(), "cancelled loads leave no state (not even a failure): {states:?}");

    assert!(worker.load_and_wait(fixture(MODEL, 128)).is_ok(), "the model loads after a cancelled load");
    assert_eq!(finished(generate_text(&worker, MODEL, "Hello there", 4)).generated_tokens, 4);
}
