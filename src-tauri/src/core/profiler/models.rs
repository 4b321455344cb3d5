use std::collections::HashMap;

use doppler_engine::{
    gpu::{GpuContext, GpuMemory, KernelVariant},
    model::MemoryFootprint,
    StepPhase,
};
use doppler_runtime::ModelState;
use serde::Serialize;

/// What a kernel does, read from its dispatch label: the columns the GPU time per token is
/// split by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum KernelKind {
    /// Weight matrix products (projections, the feed-forward network, the output head), fused
    /// norms and activations included.
    Matmul,
    /// Attention over the KV cache, and the RoPE/KV-store step before it.
    Attention,
    Norm,
    Embedding,
    /// Residual adds, biases, activations on their own.
    Elementwise,
}

/// One kernel (an operation of every layer, summed over the layers) over the sampled steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KernelRow {
    pub name: String,
    pub kind: KernelKind,
    /// Dispatches timed, over all sampled steps.
    pub calls: usize,
    pub total_ms: f64,
    pub ms_per_token: f64,
    /// Of all GPU time of the sampled steps.
    pub share: f64,
    /// Achieved weight bandwidth: the weight bytes its dispatches read (activations left out)
    /// over their GPU time; `None` for kernels that read no weights.
    pub gigabytes_per_second: Option<f64>,
    /// The kernel variants its dispatches ran, in the order first seen: one, unless layers of
    /// different weight types (a quantization mix) pick different ones.
    pub variants: Vec<KernelVariant>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KindRow {
    pub kind: KernelKind,
    pub ms_per_token: f64,
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerRow {
    /// `None`: the model-wide kernels (embedding, final norm, output head).
    pub layer: Option<u32>,
    pub ms_per_token: f64,
    pub share: f64,
}

/// The sampled steps of one phase, aggregated.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KernelTable {
    pub steps: usize,
    pub tokens: usize,
    pub gpu_ms_per_token: f64,
    /// Largest first.
    pub kernels: Vec<KernelRow>,
    pub kinds: Vec<KindRow>,
    /// In layer order, the model-wide kernels first.
    pub layers: Vec<LayerRow>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileSummary {
    pub decode: KernelTable,
    pub prefill: KernelTable,
}

/// One sampled step as the charts show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepSample {
    pub reply_id: u64,
    pub phase: StepPhase,
    pub position: u32,
    pub tokens: u32,
    /// Since the app started.
    pub at_ms: f64,
    pub gpu_ms: f64,
    /// GPU time of the step per token, by kind.
    pub kinds: Vec<KindRow>,
}

/// A finished reply's speed, from the engine's own clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyTiming {
    pub prompt_tokens: usize,
    pub prefilled_tokens: usize,
    pub generated_tokens: usize,
    pub ttft_ms: f64,
    pub prefill_tokens_per_second: f64,
    pub decode_tokens_per_second: f64,
}

/// What the profiler view hears while replies generate; a snapshot replays the same events.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ProfilerEvent {
    ReplyStarted {
        reply_id: u64,
        model_id: String,
        at_ms: f64,
    },
    FirstToken {
        reply_id: u64,
        at_ms: f64,
        ttft_ms: f64,
    },
    /// Tokens that arrived since the last such event: decode speed over `span_ms`.
    Tokens {
        reply_id: u64,
        at_ms: f64,
        count: usize,
        span_ms: f64,
    },
    Step {
        step: StepSample,
        summary: ProfileSummary,
    },
    ReplyFinished {
        reply_id: u64,
        at_ms: f64,
        timing: ReplyTiming,
    },
}

/// The adapter the engine computes on: what the profiler's device card shows.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterFacts {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    pub shader_f16: bool,
    pub subgroups: bool,
    pub subgroup_sizes: (u32, u32),
    pub cooperative_matrix: bool,
    pub timestamps: bool,
    /// Measured by a timed kernel streaming a large buffer (bytes read): the roofline's ceiling; `None`
    /// where the adapter cannot time it.
    pub peak_gigabytes_per_second: Option<f64>,
    pub limits: Vec<AdapterLimit>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterLimit {
    pub name: &'static str,
    pub value: u64,
}

impl AdapterFacts {
    pub fn of(gpu: &GpuContext) -> AdapterFacts {
        let info = &gpu.adapter_info;
        let caps = &gpu.caps;
        let limit = |name, value| AdapterLimit { name, value };
        AdapterFacts {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            shader_f16: caps.shader_f16,
            subgroups: caps.subgroups,
            subgroup_sizes: (caps.subgroup_min_size, caps.subgroup_max_size),
            cooperative_matrix: caps.cooperative_matrix,
            timestamps: caps.timestamps,
            peak_gigabytes_per_second: gpu.peak_bandwidth(),
            limits: vec![
                limit("max storage binding", caps.max_storage_binding),
                limit("max buffer size", caps.max_buffer_size),
                limit("max workgroups per dimension", caps.max_workgroups_per_dimension.into()),
                limit("workgroup storage bytes", caps.max_workgroup_storage_bytes.into()),
                limit("workgroup invocations", caps.max_workgroup_invocations.into()),
                limit("storage buffers per stage", caps.max_storage_buffers_per_stage.into()),
            ],
        }
    }
}

/// The GPU's memory and what the loaded models take of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryView {
    pub gpu: GpuMemory,
    pub tier_label: &'static str,
    pub models: Vec<LoadedFootprint>,
}

impl MemoryView {
    pub fn of(gpu: &GpuContext, models: &HashMap<String, ModelState>) -> MemoryView {
        let memory = gpu.memory();
        let mut models: Vec<LoadedFootprint> = models
            .iter()
            .filter_map(|(model_id, state)| match state {
                ModelState::Loaded { info } => Some(LoadedFootprint {
                    model_id: model_id.clone(),
                    context_len: info.context_len,
                    footprint: info.footprint,
                }),
                _ => None,
            })
            .collect();
        models.sort_by(|a, b| a.model_id.cmp(&b.model_id));
        MemoryView { tier_label: memory.tier.describe(), gpu: memory, models }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedFootprint {
    pub model_id: String,
    pub context_len: u32,
    pub footprint: MemoryFootprint,
}

/// Everything the view shows, for a file: what `export_profile` writes as JSON.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileExport {
    pub adapter: Option<AdapterFacts>,
    pub memory: Option<MemoryView>,
    pub summary: ProfileSummary,
    pub events: Vec<ProfilerEvent>,
    /// Every kernel timing of the sampled steps.
    pub steps: Vec<RecordedStep>,
}

/// A sampled step as the engine measured it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedStep {
    pub reply_id: u64,
    pub at_ms: f64,
    pub step: doppler_engine::ProfiledStep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExportFormat {
    Json,
    ChromeTrace,
}
