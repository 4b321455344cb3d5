//! GPU faults become errors, never panics or hangs: an error outside any checked operation
//! (wgpu's default handler would panic on it), and a lost device mid-conversation, with the
//! engine reporting it on the next request. Runs on lavapipe with a tiny Llama fixture.

mod support;

use doppler_engine::{
    gpu::GpuError, CancelToken, GenerateError, GenerateOptions, LoadOptions, SamplingParams,
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
