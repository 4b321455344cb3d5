use std::{
    borrow::Cow,
    ops::Range,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use super::{
    pipeline_cache::{KernelPipeline, KernelVariant},
    profiler::{op_of, KernelProfiler},
};

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

    /// These workgroups in steps of a token count in `tokens`, none in others.
    pub fn in_steps_of(self, tokens: Range<u32>) -> Workgroups {
        Workgroups::PerStep(Box::new(move |n_tokens| {
            if tokens.contains(&n_tokens) {
                self.resolve(n_tokens)
            } else {
                [0; 3]
            }
        }))
    }
}

/// Weight bytes a dispatch must read: what its achieved bandwidth (bytes over GPU time) is
/// measured by. Activations, norms and biases are left out: next to the weights of a matrix
/// product they are small, so bytes over time is a lower bound of the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightBytes {
    /// The same whatever the tokens: a product reads each of its weight rows once (a tiled
    /// prefill product may read a row again for each tile of tokens; caches serve most of those).
    Fixed(u64),
    /// For each token of the step: a gather reads one table row per token.
    PerToken(u64),
}

impl WeightBytes {
    pub fn resolve(self, n_tokens: u32) -> u64 {
        match self {
            WeightBytes::Fixed(bytes) => bytes,
            WeightBytes::PerToken(bytes) => bytes * u64::from(n_tokens),
        }
    }
}

/// Whether the dispatches it is attached to run in the steps encoded from now on, set by the
/// owner of those kernels (the sampler's candidate kernels run only in candidate mode), so a
/// recorded step sheds work without being recorded again.
pub type DispatchSwitch = Arc<AtomicBool>;

/// One recorded kernel launch: everything it needs was created at load time.
pub struct Dispatch {
    pub label: Cow<'static, str>,
    pub pipeline: Arc<KernelPipeline>,
    pub bind_group: wgpu::BindGroup,
    pub workgroups: Workgroups,
    pub switch: Option<DispatchSwitch>,
    /// `None` for kernels that read no weight matrix.
    pub weight_bytes: Option<WeightBytes>,
}

impl Dispatch {
    /// The dispatch, encoded only while `switch` is on.
    pub fn switched_by(self, switch: &DispatchSwitch) -> Self {
        Self { switch: Some(switch.clone()), ..self }
    }

    /// The dispatch, reading `bytes` of weights.
    pub fn reading(self, bytes: WeightBytes) -> Self {
        Self { weight_bytes: Some(bytes), ..self }
    }

    fn is_on(&self) -> bool {
        self.switch.as_ref().is_none_or(|switch| switch.load(Ordering::Relaxed))
    }
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

    /// These dispatches, launching workgroups only in steps of a token count in `tokens`: for
    /// two ways of one operation, each where it is faster.
    pub fn in_steps_of(self, tokens: Range<u32>) -> OpList {
        let dispatches = self.dispatches.into_iter().map(|dispatch| Dispatch {
            workgroups: dispatch.workgroups.in_steps_of(tokens.clone()),
            ..dispatch
        });
        OpList { dispatches: dispatches.collect() }
    }

    pub fn len(&self) -> usize {
        self.dispatches.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dispatches.is_empty()
    }

    /// The labels of the dispatches that are on: those the next encode runs.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.dispatches.iter().filter(|d| d.is_on()).map(|d| d.label.as_ref())
    }

    /// Logs which kernel variant each operation runs, once per operation and variant with the
    /// number of its dispatches (an operation of every layer is one line): at load, so a
    /// wrong variant shows in the log before any time is measured.
    pub fn log_variants(&self, step: &str) {
        let mut uses: Vec<(&str, &KernelVariant, usize)> = Vec::new();
        for dispatch in &self.dispatches {
            let (op, variant) = (op_of(&dispatch.label), dispatch.pipeline.variant.as_ref());
            match uses.iter_mut().find(|(seen_op, seen, _)| *seen_op == op && *seen == variant) {
                Some((.., count)) => *count += 1,
                None => uses.push((op, variant, 1)),
            }
        }
        for (op, variant, dispatches) in uses {
            tracing::info!(step, op, %variant, dispatches, "kernel variant");
        }
    }

    /// Encodes every dispatch that is on for a step of `n_tokens`; with a profiler, each
    /// dispatch is timed.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        n_tokens: u32,
        profiler: Option<&KernelProfiler>,
    ) {
        let dispatches = self.dispatches.iter().filter(|dispatch| dispatch.is_on());
        match profiler {
            Some(profiler) => profiler.encode_timed(encoder, &dispatches.collect::<Vec<_>>(), n_tokens),
            None => {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("step"),
                    timestamp_writes: None,
                });
                for dispatch in dispatches {
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
    pass.set_pipeline(&dispatch.pipeline.compute);
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
