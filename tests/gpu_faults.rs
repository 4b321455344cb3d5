//! GPU faults become errors, never panics or hangs: an error outside any checked operation
//! (wgpu's default handler would panic on it), a lost device mid-conversation, a submit wgpu
//! refuses and running out of memory during the weight upload, each reported on the request it
//! breaks while the next one works. Faults are injected at the engine's GPU seams (the
//! `fault-injection` feature). Runs on lavapipe with a tiny Llama fixture.

mod support;

use doppler_engine::{
    gpu::{GpuError, GpuFault, WeightUploadError},
    model::ModelError,
    CancelToken, Engine, GenerateError, GenerateOptions, LoadOptions, SamplingParams, Session,
};
use support::{gpu::default_engine, models::fixture};

fn options() -> LoadOptions {
    LoadOptions { context_len: Some(128), max_batch: Some(16), ..Default::default() }
}

fn greedy() -> GenerateOptions {
    GenerateOptions { sampling: SamplingParams::greedy(), max_tokens: 4, stop: Vec::new(), ignore_eos: true }
}

#[test]
fn an_uncaught_gpu_error_is_reported_not_a_panic() {
    let engine = default_engine();
    let model = engine.load_model(&fixture("llama3"), options(), &mut |_| {}).unwrap();
    let mut session = model.new_session().unwrap();
    // Mapped for reading and bound as storage at once: invalid, outside any error scope.
    let _invalid = engine.gpu().device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("invalid"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let error = session.generate(&[1, 2, 3], &greedy(), &CancelToken::new(), &mut |_| {}).unwrap_err();
    assert!(matches!(error, GenerateError::Gpu(GpuError::Uncaught(_))), "{error}");
    // Reported once: the session goes on.
    let summary = session.generate(&[1, 2, 3], &greedy(), &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(summary.generated_tokens, 4);
}

#[test]
fn a_lost_device_fails_the_next_requests_with_device_lost() {
    let engine = default_engine();
    let model = engine.load_model(&fixture("llama3"), options(), &mut |_| {}).unwrap();
    let mut session = model.new_session().unwrap();
    session.generate(&[1, 2, 3], &greedy(), &CancelToken::new(), &mut |_| {}).unwrap();
    engine.gpu().device.destroy();
    let error = session.generate(&[1, 2, 3, 4], &greedy(), &CancelToken::new(), &mut |_| {}).unwrap_err();
    assert!(matches!(error, GenerateError::Gpu(GpuError::DeviceLost(_))), "{error}");
    assert!(engine.gpu().is_lost());
    let error = engine
        .load_model(&fixture("llama3"), options(), &mut |_| {})
        .err()
        .expect("no model loads on a lost device");
    assert!(error.to_string().contains("lost"), "{error}");
    // A new engine opens the device again.
    let engine = default_engine();
    let model = engine.load_model(&fixture("llama3"), options(), &mut |_| {}).unwrap();
    let summary = model
        .new_session()
        .unwrap()
        .generate(&[1, 2, 3], &greedy(), &CancelToken::new(), &mut |_| {})
        .unwrap();
    assert_eq!(summary.generated_tokens, 4);
}

fn new_session(engine: &Engine) -> Session {
    engine.load_model(&fixture("llama3"), options(), &mut |_| {}).unwrap().new_session().unwrap()
}

/// `len` token ids from `seed`, inside the fixture's vocabulary.
fn prompt(len: u32, seed: u32) -> Vec<u32> {
    (0..len).map(|i| 1 + (i * 37 + seed * 101) % 500).collect()
}

fn tokens_of(session: &mut Session, prompt: &[u32]) -> Result<Vec<u32>, GenerateError> {
    Ok(session.generate(prompt, &greedy(), &CancelToken::new(), &mut |_| {})?.tokens)
}

#[test]
fn a_refused_submit_fails_its_generation_and_leaves_no_unwritten_position_cached() {
    let engine = default_engine();
    // 40 tokens run as prefill steps of 16, 16 and 8 tokens.
    let asked = prompt(40, 1);
    let clean = tokens_of(&mut new_session(&engine), &asked).unwrap();

    let mut session = new_session(&engine);
    // Another prompt with the same first step leaves its own keys and values at 16..40.
    let mut other = prompt(40, 2);
    other[..16].copy_from_slice(&asked[..16]);
    tokens_of(&mut session, &other).unwrap();
    // The asked prompt reuses the first step; its second runs, its third is refused.
    engine.gpu().inject_fault(GpuFault::FailSubmit { after: 1 });
    let error = tokens_of(&mut session, &asked).unwrap_err();
    assert!(
        matches!(&error, GenerateError::Gpu(GpuError::Validation { operation, .. }) if operation == "prefill step"),
        "{error}"
    );
    assert_eq!(session.cached_tokens(), &asked[..32], "only the steps that ran are cached");
    // Were the refused step's positions marked cached, the stale keys of `other` would answer.
    let summary = session.generate(&asked, &greedy(), &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(summary.prefilled_tokens, 8);
    assert_eq!(summary.tokens, clean);

    // A refused decode batch fails its generation too, and the next one runs as a clean one.
    session.reset();
    engine.gpu().inject_fault(GpuFault::FailSubmit { after: 3 });
    let error = tokens_of(&mut session, &asked).unwrap_err();
    assert!(
        matches!(&error, GenerateError::Gpu(GpuError::Validation { operation, .. }) if operation == "decode steps"),
        "{error}"
    );
    assert_eq!(tokens_of(&mut session, &asked).unwrap(), clean);
}

/// GPU memory the device holds once its queued work has run: wgpu frees a buffer written at
/// creation, and its staging copy, only after the next submit.
fn settled_bytes(engine: &Engine) -> u64 {
    engine.gpu().queue.submit([]);
    let _ = engine.gpu().device.poll(wgpu::PollType::wait_indefinitely());
    engine.gpu().allocated_bytes().expect("the Vulkan allocator reports its allocations")
}

#[test]
fn out_of_memory_during_the_upload_names_the_tensor_keeps_nothing_and_the_next_load_works() {
    let engine = default_engine();
    let held_before = settled_bytes(&engine);
    // Two matrices upload; the third finds the GPU full.
    engine.gpu().inject_fault(GpuFault::OutOfMemory { after: 2 });
    let error = engine.load_model(&fixture("llama3"), options(), &mut |_| {}).err().expect("the load fails");
    let message = error.to_string();
    match &error {
        GenerateError::Model(ModelError::Upload(WeightUploadError::OutOfMemory {
            name,
            rows,
            row_len,
            tensor_bytes,
            buffer_bytes,
            ..
        })) => {
            assert!(name.starts_with("blk.0."), "{message}");
            assert!(*rows > 0 && *row_len > 0 && buffer_bytes > tensor_bytes, "{message}");
            for part in [name.as_str(), &tensor_bytes.to_string(), &buffer_bytes.to_string()] {
                assert!(message.contains(part), "{message} names {part}");
            }
        }
        other => panic!("not an out-of-memory upload error: {other}"),
    }
    // The tensors uploaded before it are freed with the staging buffers.
    assert_eq!(settled_bytes(&engine), held_before, "nothing of the failed load is kept");

    let summary =
        new_session(&engine).generate(&[1, 2, 3], &greedy(), &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(summary.generated_tokens, 4);
}
