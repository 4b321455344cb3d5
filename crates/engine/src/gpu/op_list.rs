use std::{borrow::Cow, sync::Arc};

use super::profiler::KernelProfiler;

/// How many workgroups a recorded dispatch launches.
pub enum Workgroups {
    Fixed([u32; 3]),
    /// Depends on the number of tokens in the step (prefill batches vary in size).
    PerStep(Box<dyn Fn(u32) -> [u32; 3] + Send + Sync>),
}

impl Workgroups {
    pub fn resolve(&self, n_tokens: u32) -> [u32; 3] {
        match self {
            Workgroups::Fixed(size) => *size,
            Workgroups::PerStep(size_for) => size_for(n_tokens),
        }
    }
}

/// One recorded kernel launch: everything it needs was created at load time.
pub struct Dispatch {
    pub label: Cow<'static, str>,
    pub pipeline: Arc<wgpu::ComputePipeline>,
    pub bind_group: wgpu::BindGroup,
    pub workgroups: Workgroups,
}

/// A forward step as a list of dispatches, recorded once at load and encoded into one
/// compute pass per step, so a step costs one encoder and one submit.
#[derive(Default)]
pub struct OpList {
    dispatches: Vec<Dispatch>,
}

impl OpList {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, dispatch: Dispatch) {
        self.dispatches.push(dispatch);
    }

    pub fn extend(&mut self, other: OpList) {
        self.dispatches.extend(other.dispatches);
    }

    pub fn len(&self) -> usize {
        self.dispatches.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dispatches.is_empty()
    }

    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.dispatches.iter().map(|d| d.label.as_ref())
    }

    /// Encodes every dispatch for a step of `n_tokens`; with a profiler, each dispatch is timed.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, n_tokens: u32, profiler: Option<&KernelProfiler>) {
        match profiler {
            Some(profiler) => profiler.encode_timed(encoder, &self.dispatches, n_tokens),
            None => {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("step"), timestamp_writes: None });
                for dispatch in &self.dispatches {
                    encode_one(&mut pass, dispatch, n_tokens);
                }
            }
        }
    }
}

pub(super) fn encode_one(pass: &mut wgpu::ComputePass<'_>, dispatch: &Dispatch, n_tokens: u32) {
    let [x, y, z] = dispatch.workgroups.resolve(n_tokens);
    if x == 0 || y == 0 || z == 0 {
        return;
    }
    pass.set_pipeline(&dispatch.pipeline);
    pass.set_bind_group(0, &dispatch.bind_group, &[]);
    pass.dispatch_workgroups(x, y, z);
}

/// Spreads `count` workgroups over x and y so no dimension exceeds the device limit;
/// kernels recover the linear index as `id.x + id.y * num_workgroups.x`.
pub fn grid(count: u32, max_per_dimension: u32) -> [u32; 3] {
    if count <= max_per_dimension {
        [count, 1, 1]
    } else {
        let y = count.div_ceil(max_per_dimension);
        [count.div_ceil(y), y, 1]
    }
}
