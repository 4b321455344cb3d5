use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex},
};

use serde::Serialize;

use super::{
    context::GpuCapabilities,
    shader::{expand, Define, ShaderSourceError},
    GpuContext,
};

/// Kernels whose workgroup arrays are indexed only by thread and loop indices that their
/// constant tile sizes bound, and whose buffer reads are guarded by the validated shape of the
/// product: the prefill matmul and attention on tensor cores.
const UNCHECKED_INDEX_SHADERS: [&str; 2] = ["matmul_tiled.wgsl", "attention_flash.wgsl"];

/// What naga adds to a kernel to make untrusted WGSL safe, less what our own kernels do not
/// need. Loop bounding (a counter and a branch in every loop, against loops that never end)
/// goes for all of them: every loop here counts towards a bound from its constants or the
/// validated shapes. It cost 15% of Llama prefill and 3–5% of decode on an H100
/// (`bench/results/2026-11-26-h100-runtime-checks/`). Index clamping goes only where
/// `UNCHECKED_INDEX_SHADERS` says it is not needed; buffer bounds stay wherever the driver
/// does not enforce them itself (wgpu leaves those to robustBufferAccess2 on Vulkan anyway).
fn runtime_checks(shader: &str) -> wgpu::ShaderRuntimeChecks {
    wgpu::ShaderRuntimeChecks {
        bounds_checks: !UNCHECKED_INDEX_SHADERS.contains(&shader),
        force_loop_bounding: false,
        ..wgpu::ShaderRuntimeChecks::checked()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Source(#[from] ShaderSourceError),
    #[error("shader '{shader}' entry '{entry}' with defines [{defines}] failed to compile: {message}")]
    Compile { shader: String, entry: String, defines: String, message: String },
}

/// Which kernel variant a pipeline runs: the shader, entry point and defines it was compiled
/// from and the workgroup size they give. The profiler shows it beside each dispatch's time,
/// since a wrong variant (a fallback where the fast path was meant) shows only as a slow kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct KernelVariant {
    pub shader: String,
    pub entry: String,
    /// Flags as `NAME`, constants as `NAME=value`, sorted.
    pub defines: Vec<String>,
    pub workgroup_size: [u32; 3],
}

impl fmt::Display for KernelVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.workgroup_size;
        write!(f, "{}:{} [{}] {x}×{y}×{z}", self.shader, self.entry, self.defines.join(", "))
    }
}

/// A compiled kernel and the variant it was compiled as.
#[derive(Debug)]
pub struct KernelPipeline {
    pub compute: wgpu::ComputePipeline,
    pub variant: Arc<KernelVariant>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    shader: String,
    entry: String,
    defines: Vec<Define>,
}

/// Compiled compute pipelines keyed by (shader, entry point, defines), so every kernel
/// variant is compiled once per device however many ops use it.
pub struct PipelineCache {
    caps: GpuCapabilities,
    pipelines: Mutex<HashMap<PipelineKey, Arc<KernelPipeline>>>,
}

impl PipelineCache {
    pub(super) fn new(caps: GpuCapabilities) -> Self {
        Self { caps, pipelines: Mutex::new(HashMap::new()) }
    }

    pub fn len(&self) -> usize {
        self.pipelines.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capabilities(&self) -> &GpuCapabilities {
        &self.caps
    }
}

impl GpuContext {
    /// The pipeline for `entry` in `shader` under `defines`, compiled on first use.
    pub fn pipeline(
        &self,
        shader: &str,
        entry: &str,
        defines: &[Define],
    ) -> Result<Arc<KernelPipeline>, PipelineError> {
        let mut sorted = defines.to_vec();
        sorted.sort();
        sorted.dedup();
        let key = PipelineKey { shader: shader.to_string(), entry: entry.to_string(), defines: sorted };
        if let Some(pipeline) = self.pipelines.pipelines.lock().unwrap().get(&key) {
            return Ok(pipeline.clone());
        }
        let source = expand(shader, &key.defines)?;
        let defines: Vec<String> = key
            .defines
            .iter()
            .map(|d| if d.value.is_empty() { d.name.clone() } else { format!("{}={}", d.name, d.value) })
            .collect();
        let compile_error = |message: String| PipelineError::Compile {
            shader: shader.to_string(),
            entry: entry.to_string(),
            defines: defines.join(", "),
            message,
        };
        let label = format!("{shader}:{entry}");
        let compute = self
            .checked(&label, || {
                let descriptor = wgpu::ShaderModuleDescriptor {
                    label: Some(&label),
                    source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                };
                // SAFETY: the checks `runtime_checks` drops are ones its comment shows our own
                // shaders do not need.
                let module =
                    unsafe { self.device.create_shader_module_trusted(descriptor, runtime_checks(shader)) };
                self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
            })
            .map_err(|error| compile_error(error.to_string()))?;
        let workgroup_size = workgroup_size(&source, entry).map_err(compile_error)?;
        let variant =
            KernelVariant { shader: shader.to_string(), entry: entry.to_string(), defines, workgroup_size };
        tracing::debug!(%variant, "kernel variant compiled");
        let pipeline = KernelPipeline { compute, variant: Arc::new(variant) };
        let pipeline = Arc::new(pipeline);
        self.pipelines.pipelines.lock().unwrap().insert(key, pipeline.clone());
        Ok(pipeline)
    }
}

/// The workgroup size of `entry` in the expanded `source`, as naga (the WGSL front end wgpu
/// compiles with) reads it: defines often set it, so it is only known once they are applied.
fn workgroup_size(source: &str, entry: &str) -> Result<[u32; 3], String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|error| error.emit_to_string(source))?;
    module
        .entry_points
        .iter()
        .find(|point| point.name == entry)
        .map(|point| point.workgroup_size)
        .ok_or_else(|| format!("no entry point '{entry}'"))
}
