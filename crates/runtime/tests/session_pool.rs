//! Clients taking turns keep their own KV caches: a conversation that continues after another
//! one ran in between still finds its prefix cached. Lavapipe, tiny fixture.

use std::{path::Path, sync::mpsc};

use doppler_engine::{EngineOptions, GenerateOptions, GenerationSummary, SamplingParams};
use doppler_runtime::{
    EngineWorker, GenerationObserver, GenerationOutcome, GenerationRequest, LoadRequest, Prompt,
};

const MODEL: &str = "llama3-fixture";

struct Outcome(mpsc::Sender<GenerationOutcome>);

impl GenerationObserver for Outcome {
    fn queued(&mut self, _ahead: usize) {}
    fn started(&mut self) {}
    fn token(&mut self, _text: &str) {}
    fn finished(self: Box<Self>, outcome: GenerationOutcome) {
        let _ = self.0.send(outcome);
    }
}

fn generate(worker: &EngineWorker<u32>, text: &str) -> GenerationSummary {
    let (sender, outcome) = mpsc::channel();
    let request = GenerationRequest {
        model_id: MODEL.into(),
        owner: "test".into(),
        key: 0,
        prompt: Prompt::Text(text.into()),
        options: GenerateOptions {
            sampling: SamplingParams::greedy(),
            max_tokens: 2,
            stop: Vec::new(),
            ignore_eos: true,
        },
    };
    worker.generate(request, Box::new(Outcome(sender))).expect("the queue has room");
    match outcome.recv().expect("the worker reports every generation's end") {
        GenerationOutcome::Finished(summary) => summary,
        GenerationOutcome::CancelledWhileQueued => panic!("cancelled while queued"),
        GenerationOutcome::Failed(failure) => panic!("failed: {failure}"),
    }
}

#[test]
fn a_conversation_keeps_its_cache_while_another_runs_in_between() {
    let worker = EngineWorker::<u32>::spawn(EngineOptions::default(), 4);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf");
    worker
        .load_and_wait(LoadRequest { model_id: MODEL.into(), path, context_len: Some(256) })
        .expect("the fixture loads");

    let first = "The lighthouse keeper climbed the stairs every evening to light the lamp for the ships";
    let other = "Numbers: seven, eleven, thirteen, seventeen, nineteen, twenty-three, twenty-nine";
    let a = generate(&worker, first);
    assert_eq!(a.prefilled_tokens, a.prompt_tokens, "nothing cached yet");
    let b = generate(&worker, other);
    assert!(b.prefilled_tokens >= b.prompt_tokens - 1, "the other client shares nothing with the first");

    // The first client goes on: its prompt extends its first one, which is still cached
    // although the other client's generation ran in between.
    let continued = generate(&worker, &format!("{first} and the fishermen"));
    assert!(
        continued.prefilled_tokens * 3 < continued.prompt_tokens,
        "{} of {} prompt tokens were run again: the first client's cache was lost",
        continued.prefilled_tokens,
        continued.prompt_tokens
    );
    // And so does the other.
    let other_continued = generate(&worker, &format!("{other}, thirty-one"));
    assert!(other_continued.prefilled_tokens * 3 < other_continued.prompt_tokens);
}
