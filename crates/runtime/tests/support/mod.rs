//! The worker tests' common parts: the tiny fixture model, a generation run to its end, and
//! its outcome unwrapped.

use std::{path::Path, sync::mpsc};

use doppler_engine::{GenerateOptions, GenerationSummary, SamplingParams};
use doppler_runtime::{
    EngineWorker, GenerationObserver, GenerationOutcome, GenerationRequest, LoadRequest, Prompt,
};

/// The llama3 fixture (tests/data/hf) loaded as `model_id` with a context of `context_len`.
pub fn fixture(model_id: &str, context_len: u32) -> LoadRequest {
    LoadRequest {
        model_id: model_id.into(),
        path: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf"),
        context_len: Some(context_len),
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

/// Greedy `max_tokens` after raw `text` on `model_id`, waited for.
pub fn generate_text(
    worker: &EngineWorker<u32>,
    model_id: &str,
    text: &str,
    max_tokens: u32,
) -> GenerationOutcome {
    let (sender, outcome) = mpsc::channel();
    let request = GenerationRequest {
        model_id: model_id.into(),
        owner: "test".into(),
        key: 0,
        prompt: Prompt::Text(text.into()),
        options: GenerateOptions {
            sampling: SamplingParams::greedy(),
            max_tokens,
            stop: Vec::new(),
            ignore_eos: true,
        },
    };
    worker.generate(request, Box::new(Outcome(sender))).expect("the queue has room");
    outcome.recv().expect("the worker reports every generation's end")
}

pub fn finished(outcome: GenerationOutcome) -> GenerationSummary {
    match outcome {
        GenerationOutcome::Finished(summary) => summary,
        GenerationOutcome::CancelledWhileQueued => panic!("cancelled while queued"),
        GenerationOutcome::Failed(failure) => panic!("failed: {failure}"),
    }
}
