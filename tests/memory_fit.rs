//! The memory estimate against what the GPU allocator actually holds once a model and a
//! session are up (lavapipe in CI), and the loader refusing a model that does not fit before
//! anything is uploaded, with advice that works.

mod support;

use std::path::{Path, PathBuf};

use doppler_engine::{
    model::{FitAdvice, ModelTooLarge},
    Engine, GenerateError, LoadOptions,
};
use support::{
    gpu::default_engine,
    models::{fixture, model_path, GEMMA, SMOLLM2},
};

fn load(
    engine: &Engine,
    path: &Path,
    context_len: u32,
    memory_budget: Option<u64>,
) -> Result<std::sync::Arc<doppler_engine::LoadedModel>, GenerateError> {
    engine.load_model(
        path,
        LoadOptions {
            context_len: Some(context_len),
            max_batch: Some(64),
            memory_budget,
            ..LoadOptions::default()
        },
        &mut |_| {},
    )
}

#[test]
fn the_estimate_is_within_five_percent_of_what_is_allocated() {
    let engine = default_engine();
    let gpu = engine.gpu().clone();
    let mut models: Vec<PathBuf> = ["gemma3", "qwen2", "llama3"].into_iter().map(fixture).collect();
    models.extend([GEMMA, SMOLLM2].into_iter().filter_map(model_path));
    for path in models {
        for context_len in [512, 4096] {
            let before = gpu.allocated_bytes().expect("the Vulkan allocator reports its allocations");
            let model = load(&engine, &path, context_len, None).unwrap();
            let session = model.new_session().unwrap();
            // Uploads wait in staging buffers until the next submit; the first step's submit frees them.
            gpu.queue.submit([]);
            gpu.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            let allocated = gpu.allocated_bytes().unwrap() - before;
            let estimate = model.info().footprint.total();
            let error = (estimate as f64 - allocated as f64) / allocated as f64;
            println!(
                "{} at {context_len}: estimate {estimate}, allocated {allocated} ({:+.2}%)",
                path.display(),
                error * 100.0
            );
            assert!(
                error.abs() < 0.05,
                "{}: estimate {estimate} vs allocated {allocated} at {context_len} tokens",
                path.display()
            );
            drop(session);
            drop(model);
        }
    }
}

#[test]
fn a_model_over_the_budget_is_refused_before_upload_with_a_context_that_fits() {
    let engine = default_engine();
    let gpu = engine.gpu().clone();
    let path = fixture("qwen2");
    let footprint = load(&engine, &path, 4096, None).unwrap().info().footprint;
    // Room for the weights and a quarter of the KV cache.
    let budget = footprint.weights + footprint.scratch + footprint.kv_cache / 4;
    let before = gpu.allocated_bytes().unwrap();
    let refused = load(&engine, &path, 4096, Some(budget)).err().expect("over the budget");
    assert_eq!(gpu.allocated_bytes().unwrap(), before, "nothing was allocated for a refused model");
    let GenerateError::TooLarge(too_large) = &refused else { panic!("expected TooLarge, got {refused}") };
    let ModelTooLarge { advice, budget: reported, .. } = too_large.as_ref();
    assert_eq!(*reported, budget);
    let message = refused.to_string();
    assert!(
        message.contains("needs") && message.contains("budget") && message.contains("4096 tokens"),
        "{message}"
    );
    let FitAdvice::ShorterContext { context_len } = *advice else {
        panic!("expected a shorter context, got {advice:?}")
    };
    assert!((512..4096).contains(&context_len), "advised {context_len}");
    let fitting = load(&engine, &path, context_len, Some(budget)).unwrap();
    assert!(fitting.info().footprint.total() <= budget);
    assert!(
        load(&engine, &path, context_len + 256, Some(budget)).is_err(),
        "the advice is the longest that fits"
    );
}

#[test]
fn weights_over_the_budget_advise_a_smaller_quantization() {
    let engine = default_engine();
    let path = fixture("qwen2");
    // The session the advice assumes is one of 256 tokens.
    let footprint = load(&engine, &path, 256, None).unwrap().info().footprint;
    // Room for half the weights beside the session.
    let budget = footprint.weights / 2 + footprint.kv_cache + footprint.scratch;
    let refused = load(&engine, &path, 512, Some(budget)).err().expect("over the budget");
    let GenerateError::TooLarge(too_large) = &refused else { panic!("expected TooLarge, got {refused}") };
    let FitAdvice::SmallerQuantization { weights_within, suggestion } = too_large.advice else {
        panic!("expected a smaller quantization, got {:?}", too_large.advice)
    };
    assert_eq!(weights_within, footprint.weights / 2);
    // Half the bytes of a Q8_0 file: a 4-bit type, not the file's own or a larger one.
    assert!(matches!(suggestion, Some("Q4_K_M" | "IQ4_XS" | "Q3_K_M")), "{suggestion:?}");
    assert!(refused.to_string().contains("would have to take at most"), "{refused}");
}
