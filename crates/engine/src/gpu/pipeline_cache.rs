use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use super::{
    context::GpuCapabilities,
    shader::{expand, Define, ShaderSourceError},
    GpuContext,
};

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Source(#[from] ShaderSourceError),
    #[error("shader '{shader}' entry '{entry}' with defines [{defines}] failed to compile: {message}")]
    Compile { shader: String, entry: String, defines: String, message: String },
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
    pipelines: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
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
    ) -> Result<Arc<wgpu::ComputePipeline>, PipelineError> {
        let mut sorted = defines.to_vec();
        sorted.sort();
        sorted.dedup();
        let key = PipelineKey { shader: shader.to_string(), entry: entry.to_string(), defines: sorted };
        if let Some(pipeline) = self.pipelines.pipelines.lock().unwrap().get(&key) {
            return Ok(pipeline.clone());
        }
        let source = expand(shader, &key.defines)?;
        let describe_defines = || {
            key.defines
                .iter()
                .map(|d| if d.value.is_empty() { d.name.clone() } else { format!("{}={}", d.name, d.value) })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let label = format!("{shader}:{entry}");
        let pipeline = self
            .checked(&label, || {
                let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(&label),
                    source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                });
                self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
            })
            .map_err(|error| PipelineError::Compile {
                shader: shader.to_string(),
                entry: entry.to_string(),
                defines: describe_defines(),
                message: error.to_string(),
            })?;
        // Which variant each kernel runs is where silent selection bugs hide: say it once, as it compiles.
        tracing::debug!(shader, entry, defines = %describe_defines(), "kernel variant compiled");
        let pipeline = Arc::new(pipeline);
        self.pipelines.pipelines.lock().unwrap().insert(key, pipeline.clone());
        Ok(pipeline)
    }
}
