//! GPU faults do not need a restart. A lost device: the worker drops the models that were on
//! it, opens a fresh device, and loads each again on its next generation. A refused submit
//! fails its generation and the next one runs as before; out of memory while loading fails
//! that load and the next load works. Lavapipe, tiny fixture.

mod support;

use doppler_engine::{gpu::GpuError, EngineOptions, GenerateError};
use doppler_runtime::{
    EngineWorker, GenerationFailure, GenerationOutcome, InjectedFault, LoadFailure, LoadRequest, ModelState,
};
use support::{finished, fixture, generate_text};

const MODEL: &str = "llama3-fixture";

fn load_request() -> LoadRequest {
    load_request_as(MODEL)
}

fn load_request_as(model_id: &str) -> LoadRequest {
    fixture(model_id, 128)
}

fn generate(worker: &EngineWorker<u32>) -> GenerationOutcome {
    generate_with(worker, MODEL)
}

fn generate_with(worker: &EngineWorker<u32>, model_id: &str) -> GenerationOutcome {
    generate_text(worker, model_id, "Hello there", 4)
}

fn generated_tokens(outcome: GenerationOutcome) -> usize {
    finished(outcome).generated_tokens
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

#[test]
fn a_refused_submit_fails_one_generation_and_the_next_runs_as_before() {
    let worker = EngineWorker::<u32>::spawn(EngineOptions::default(), 4);
    worker.load_and_wait(load_request()).expect("the fixture loads");
    let before = finished(generate(&worker)).tokens;

    worker.inject_fault(InjectedFault::FailSubmit { after: 0 });
    match generate(&worker) {
        GenerationOutcome::Failed(GenerationFailure::Engine(GenerateError::Gpu(GpuError::Validation {
            ..
        }))) => {}
        GenerationOutcome::Failed(failure) => panic!("not a refused submit: {failure}"),
        _ => panic!("the generation ran despite the refused submit"),
    }
    assert!(matches!(worker.model_states().get(MODEL), Some(ModelState::Loaded { .. })));
    assert_eq!(finished(generate(&worker)).tokens, before);
}

#[test]
fn out_of_memory_while_loading_fails_that_load_and_the_next_load_works() {
    let worker = EngineWorker::<u32>::spawn(EngineOptions::default(), 4);
    worker.load_and_wait(load_request()).expect("the fixture loads");
    let second = "second-copy";

    worker.inject_fault(InjectedFault::OutOfMemory { after: 0 });
    let Err(LoadFailure::Model(reason)) = worker.load_and_wait(load_request_as(second)) else {
        panic!("the load ran despite the full GPU");
    };
    assert!(reason.contains("out of GPU memory") && reason.contains("token_embd.weight"), "{reason}");
    assert!(matches!(worker.model_states().get(second), Some(ModelState::Failed { .. })));
    // The model loaded before is untouched, and the next load works.
    generated_tokens(generate(&worker));
    worker.load_and_wait(load_request_as(second)).expect("the next load works");
    generated_tokens(generate_with(&worker, second));
}
