//! Clients taking turns keep their own KV caches: a conversation that continues after another
//! one ran in between still finds its prefix cached. Lavapipe, tiny fixture.

mod support;

use doppler_engine::{EngineOptions, GenerationSummary};
use doppler_runtime::EngineWorker;
use support::{finished, fixture, generate_text};

const MODEL: &str = "llama3-fixture";

fn generate(worker: &EngineWorker<u32>, text: &str) -> GenerationSummary {
    finished(generate_text(worker, MODEL, text, 2))
}

#[test]
fn a_conversation_keeps_its_cache_while_another_runs_in_between() {
    let worker = EngineWorker::<u32>::spawn(EngineOptions::default(), 4);
    worker.load_and_wait(fixture(MODEL, 256)).expect("the fixture loads");

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
