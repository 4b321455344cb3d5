//! The GPU side of tests: engines and contexts on whatever adapter wgpu finds (lavapipe in
//! CI), deterministic inputs, buffers, and running recorded kernels.

use std::sync::Arc;

use doppler_engine::{
    gpu::{GpuContext, GpuOptions, GpuTensor, OpList, StepBuffer},
    Engine, EngineOptions,
};

const NO_ADAPTER: &str = "a wgpu adapter (lavapipe: apt-get install mesa-vulkan-drivers)";

/// An engine with default options.
pub fn default_engine() -> Engine {
    Engine::new(EngineOptions::default()).expect(NO_ADAPTER)
}

pub fn gpu(options: GpuOptions) -> Arc<GpuContext> {
    GpuContext::new(&options).expect(NO_ADAPTER)
}

/// A context whose kernels take their shared-memory fallbacks for subgroup reductions, shaped
/// as for a GPU also on a CPU adapter (lavapipe), so that CI tests the shapes GPUs run.
pub fn without_subgroups() -> Arc<GpuContext> {
    let ctx = gpu(GpuOptions { disable_subgroups: true, gpu_shapes_on_cpu: true, ..Default::default() });
    assert!(!ctx.caps.subgroups);
    ctx
}

/// Deterministic values in [-1, 1) (xorshift).
pub fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// An f32 tensor of `data`, `width` values a row.
pub fn f32_tensor(ctx: &GpuContext, width: usize, data: &[f32]) -> GpuTensor {
    GpuTensor::from_f32(ctx, "data", width as u32, data)
}

/// Every value of an f32 tensor, read back.
pub fn read_tensor(ctx: &GpuContext, tensor: &GpuTensor) -> Vec<f32> {
    ctx.read_f32(tensor.buffer(), tensor.len() as usize).expect("read back")
}

/// The step buffer kernels read their position and token count from.
pub fn step_buffer(ctx: &GpuContext, pos: u32, n_tokens: u32) -> StepBuffer {
    let step = StepBuffer::new(ctx);
    step.write(&ctx.queue, pos, n_tokens);
    step
}

/// Encodes `ops` for `n_tokens` and submits them.
pub fn run(ctx: &GpuContext, ops: &OpList, n_tokens: u32) {
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    ops.encode(&mut encoder, n_tokens, None);
    ctx.queue.submit([encoder.finish()]);
}
