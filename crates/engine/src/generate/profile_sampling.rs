//! Live kernel profiles: GPU timestamps on the first prefill step of each prompt and on one
//! decode step out of N, none sooner than a minimum interval after the last, handed to a sink
//! as they are read back, so a profiler view can follow a generation without the cost of timing
//! every step.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::gpu::{GpuContext, GpuError, KernelProfiler, KernelTiming};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPhase {
    Prefill,
    Decode,
}

/// The kernel timings of one sampled step.
#[derive(Debug, Clone, Serialize)]
pub struct ProfiledStep {
    pub phase: StepPhase,
    /// Position of the step's first token.
    pub position: u32,
    pub tokens: u32,
    pub kernels: Vec<KernelTiming>,
}

pub type ProfileSink = Box<dyn FnMut(ProfiledStep) + Send>;

/// Which steps are timed: the first prefill step of a prompt and one decode step in `every`,
/// none sooner than `min_interval` after the last. A timed step runs apart from its neighbours,
/// so its cost is per step on a slow model and per unit of time on a fast one: the two bounds
/// keep both small.
#[derive(Debug, Clone, Copy)]
pub struct ProfileCadence {
    pub every: usize,
    pub min_interval: Duration,
}

/// Decides which decode steps are timed and reads their timings back.
pub(super) struct ProfileSampler {
    profiler: KernelProfiler,
    cadence: ProfileCadence,
    /// Decode steps run untimed since the last timed one.
    untimed: usize,
    last_timed: Option<Instant>,
    /// A timed step is submitted and not read back yet (its timestamps own the profiler).
    pending: bool,
    sink: ProfileSink,
}

impl ProfileSampler {
    /// `None` where the adapter has no timestamp queries.
    pub fn new(ctx: &GpuContext, cadence: ProfileCadence, sink: ProfileSink) -> Option<ProfileSampler> {
        let profiler = KernelProfiler::new(ctx)?;
        let cadence = ProfileCadence { every: cadence.every.max(1), ..cadence };
        Some(ProfileSampler { profiler, cadence, untimed: 0, last_timed: None, pending: false, sink })
    }

    /// Whether the next decode batch should be a single timed step.
    pub fn decode_step_due(&self) -> bool {
        !self.pending && self.untimed >= self.cadence.every - 1 && self.interval_passed()
    }

    /// Whether the next prompt's first prefill step should be timed.
    pub fn prefill_due(&self) -> bool {
        !self.pending && self.interval_passed()
    }

    fn interval_passed(&self) -> bool {
        self.last_timed.is_none_or(|at| at.elapsed() >= self.cadence.min_interval)
    }

    /// The profiler to encode a batch of `steps` with: `Some` when the batch is the timed step.
    pub fn for_decode_batch(&mut self, steps: usize, timed: bool) -> Option<&KernelProfiler> {
        if timed {
            self.untimed = 0;
            Some(self.start_timed_step())
        } else {
            self.untimed += steps;
            None
        }
    }

    pub fn for_prefill(&mut self) -> &KernelProfiler {
        self.start_timed_step()
    }

    /// The timed step's timestamps own the profiler until `collect`, and the interval to the
    /// next timed step starts now.
    fn start_timed_step(&mut self) -> &KernelProfiler {
        self.pending = true;
        self.last_timed = Some(Instant::now());
        &self.profiler
    }

    /// Reads the timed step's timings, waiting for its `submission` only, and hands them on.
    pub fn collect(
        &mut self,
        ctx: &GpuContext,
        submission: Option<wgpu::SubmissionIndex>,
        (phase, position, tokens): (StepPhase, u32, u32),
    ) -> Result<(), GpuError> {
        self.pending = false;
        let kernels = self.profiler.read_after(ctx, submission)?;
        (self.sink)(ProfiledStep { phase, position, tokens, kernels });
        Ok(())
    }
}
