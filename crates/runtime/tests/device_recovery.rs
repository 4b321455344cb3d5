//! A lost GPU device does not need a restart: the worker drops the models that were on it,
//! opens a fresh device, and loads each again on its next generation. Lavapipe, tiny fixture.

use std::{path::Path, sync::mpsc};

use doppler_engine::{EngineOptions, GenerateOptions, SamplingParams};
use doppler_runtime::{
    EngineWorker, GenerationObserver, GenerationOutcome, GenerationRequest, InjectedFault, LoadRequest,
    ModelState, Prompt,
};

const MODEL: &str = "llama3-fixture";

fn load_request() -> LoadRequest {
    LoadRequest {
        model_id: MODEL.into(),
        path: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf"),
        context_len: Some(128),
    }
}

/// Sends the generation's outcome back to the test.
struct Outcome(mpsc::Sender<GenerationOutcome>);

impl GenerationObserver for Outcome {
    fn queued(&mut self, _ahead: usize) {}
    fn started(&mut self) {}
    fn token(&mut self, _text: &str) {}
    fn finished(self: Box<Self>, outcome: GenerationOutcome) {
        let _ = self.0.send(outcome);
    }
}

fn generate(worker: &EngineWorker<u32>) -> GenerationOutcome {
    let (sender, outcome) = mpsc::channel();
    let request = GenerationRequest {
        model_id: MODEL.into(),
        owner: "test".into(),
        key: 0,
        prompt: Prompt::Text("Hello there".into()),
        options: GenerateOptions {
            sampling: SamplingParams::greedy(),
            max_tokens: 4,
            stop: Vec::new(),
            ignore_eos: true,
        },
    };
    worker.generate(request, Box::new(Outcome(sender))).expect("the queue has room");
    outcome.recv().expect("the worker reports every generation's end")
}

fn generated_tokens(outcome: GenerationOutcome) -> usize {
    match outcome {
        GenerationOutcome::Finished(summary) => summary.generated_tokens,
        GenerationOutcome::CancelledWhileQueued => panic!("cancelled while queued"),
        GenerationOutcome::Failed(failure) => panic!("failed: {failure}"),
    }
}

#[test]
fn a_lost_device_is_opened_again_and_the_model_reloads_on_its_next_generation() {
    let worker = EngineWorker::<u32>::spawn(EngineOptions::default(), 4);
    worker.load_and_wait(load_request()).expect("the fixture loads");
    let before = generated_tokens(generate(&worker));

    worker.inject_fault(InjectedFault::DeviceLost);
    // The next generation finds the model gone with its device, loads it on a new one and runs.
    assert_eq!(generated_tokens(generate(&worker)), before);
    assert!(
        matches!(worker.model_states().get(MODEL), Some(ModelState::Loaded { .. })),
        "{:?}",
        worker.model_states().get(MODEL)
    );
    // And the recovered device keeps working.
    assert_eq!(generated_tokens(generate(&worker)), before);
}
