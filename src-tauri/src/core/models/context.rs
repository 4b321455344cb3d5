//! Each model's context: chosen in the settings, bounded by what its metadata says it was
//! trained for, saved per model and used by every load of it. The memory the choice takes
//! (weights, the KV cache sized to it, scratch) is estimated from the file as the engine does
//! before it uploads anything.

use std::path::Path;

use doppler_engine::{
    gguf::GgufFile,
    kernels::matmul_half,
    load::default_max_batch,
    model::{limits::MAX_CONTEXT, open_model_source, MemoryFootprint, ModelConfig, SessionShape},
};
use serde::Serialize;

use super::{CatalogError, ModelCatalog};
use crate::core::{app::AppSettings, downloads::adapter_memory, storage::Database};

/// The smallest context offered: a system prompt, a question and a reply.
const MIN_CONTEXT: u32 = 256;

/// A model's context as the settings show it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextSetting {
    pub model_id: String,
    /// What its loads use: the chosen context within the bounds, else the default.
    pub context_len: u32,
    /// What the user chose; `None` follows the default.
    pub chosen: Option<u32>,
    /// The model's training context, at most 8192.
    pub default_len: u32,
    pub min_len: u32,
    /// The model's training context, from its metadata.
    pub max_len: u32,
    /// GPU memory of the weights and one session at `context_len`.
    pub footprint: MemoryFootprint,
    /// Bytes a model may take on this machine's GPU, where it says.
    pub budget: Option<u64>,
}

/// What the estimate needs to know of the GPU: the open device's, else the adapter the engine
/// would open.
struct DeviceFacts {
    kv_f16: bool,
    max_storage_binding: u64,
    half_products: bool,
    budget: Option<u64>,
}

impl ModelCatalog {
    /// `model_id`'s context setting, with the memory it takes.
    pub fn context_setting(&self, db: &Database, model_id: &str) -> Result<ContextSetting, CatalogError> {
        let chosen = AppSettings::load(db)?.model_contexts.get(model_id).copied();
        let model = read_model(&self.installed(model_id)?.path)?;
        Ok(self.describe_context(model_id, chosen, &model))
    }

    /// Saves `chosen` (clamped to the model's bounds; `None` restores the default) as the
    /// context `model_id` loads with from now on. A loaded model keeps its context until it
    /// loads again.
    pub fn set_context(
        &self,
        db: &Database,
        model_id: &str,
        chosen: Option<u32>,
    ) -> Result<ContextSetting, CatalogError> {
        let model = read_model(&self.installed(model_id)?.path)?;
        let chosen = chosen.map(|tokens| ContextBounds::from_config(&model.1).clamp(tokens));
        let mut settings = AppSettings::load(db)?;
        match chosen {
            Some(tokens) => settings.model_contexts.insert(model_id.to_string(), tokens),
            None => settings.model_contexts.remove(model_id),
        };
        settings.save(db)?;
        Ok(self.describe_context(model_id, chosen, &model))
    }

    /// The context `model_id` loads with: the saved choice within its bounds (the file may
    /// have been replaced since), else the engine's default.
    pub(super) fn saved_context(
        &self,
        db: &Database,
        model_id: &str,
        path: &Path,
    ) -> Result<Option<u32>, CatalogError> {
        match AppSettings::load(db)?.model_contexts.get(model_id) {
            Some(&tokens) => Ok(Some(ContextBounds::of(path)?.clamp(tokens))),
            None => Ok(None),
        }
    }

    fn describe_context(
        &self,
        model_id: &str,
        chosen: Option<u32>,
        (gguf, config): &(GgufFile, ModelConfig),
    ) -> ContextSetting {
        let bounds = ContextBounds::from_config(config);
        let context_len = chosen.map_or(bounds.default_len, |tokens| bounds.clamp(tokens));
        let device = self.device_facts();
        ContextSetting {
            model_id: model_id.to_string(),
            context_len,
            chosen,
            default_len: bounds.default_len,
            min_len: bounds.min_len,
            max_len: bounds.max_len,
            footprint: footprint(gguf, config, context_len, &device),
            budget: device.budget,
        }
    }

    fn device_facts(&self) -> DeviceFacts {
        match self.worker.gpu() {
            Some(gpu) => DeviceFacts {
                kv_f16: gpu.caps.shader_f16,
                max_storage_binding: gpu.caps.max_storage_binding,
                half_products: matmul_half::runs_on(&gpu.caps),
                budget: gpu.memory().budget,
            },
            None => {
                let memory = adapter_memory();
                // Unknown until the device opens, and harmless uncapped: the split-K scratch it
                // caps is at most 32 MiB (8 splits × 128 tokens × 8,192 floats), under any
                // adapter's binding limit (128 MiB on lavapipe), so the estimate is the engine's.
                // Whether the f16 prefill products run (and take the larger default batch) is
                // unknown too: counted, the estimate errs high.
                DeviceFacts {
                    kv_f16: memory.kv_f16,
                    max_storage_binding: u64::MAX,
                    half_products: true,
                    budget: memory.budget,
                }
            }
        }
    }
}

/// The model file's header and configuration (its tensors stay on disk, mapped).
fn read_model(path: &Path) -> Result<(GgufFile, ModelConfig), CatalogError> {
    let unreadable = |error: String| CatalogError::Unreadable { path: path.to_path_buf(), reason: error };
    let gguf = open_model_source(path).map_err(|error| unreadable(error.to_string()))?;
    let config = ModelConfig::from_gguf(&gguf).map_err(|error| unreadable(error.to_string()))?;
    Ok((gguf, config))
}

fn footprint(
    gguf: &GgufFile,
    config: &ModelConfig,
    context_len: u32,
    device: &DeviceFacts,
) -> MemoryFootprint {
    let shape = SessionShape {
        context_len,
        max_batch: default_max_batch(device.half_products).min(context_len),
        kv_f16: device.kv_f16,
        max_storage_binding: device.max_storage_binding,
        half_products: device.half_products,
    };
    MemoryFootprint::estimate(gguf, config, &shape)
}

/// The contexts a model can be loaded with.
struct ContextBounds {
    min_len: u32,
    default_len: u32,
    max_len: u32,
}

impl ContextBounds {
    fn of(path: &Path) -> Result<ContextBounds, CatalogError> {
        read_model(path).map(|(_, config)| ContextBounds::from_config(&config))
    }

    fn from_config(config: &ModelConfig) -> ContextBounds {
        let max_len = config.train_context.clamp(1, MAX_CONTEXT);
        ContextBounds { min_len: MIN_CONTEXT.min(max_len), default_len: config.default_context(), max_len }
    }

    fn clamp(&self, tokens: u32) -> u32 {
        tokens.clamp(self.min_len, self.max_len)
    }
}
