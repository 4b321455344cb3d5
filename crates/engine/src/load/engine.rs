use std::{path::Path, sync::Arc};

use serde::Serialize;

use super::model_file::ModelFile;
use crate::generate::{CancelToken, GenerateError, Session};
use crate::{
    gguf::GgufFile,
    gpu::{GpuContext, GpuOptions},
    model::{FitAdvice, MemoryFootprint, ModelConfig, ModelTooLarge, ModelWeights, SessionShape},
    tokenizer::{ChatTemplate, Tokenizer},
};

/// How to open the GPU.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub gpu: GpuOptions,
}

impl Default for EngineOptions {
    /// The best adapter, with the `DOPPLER_ADAPTER`/`DOPPLER_DISABLE_*` overrides applied.
    fn default() -> Self {
        Self { gpu: GpuOptions::from_env() }
    }
}

/// The engine: one GPU device, shared by every model loaded on it.
#[derive(Clone)]
pub struct Engine {
    ctx: Arc<GpuContext>,
}

/// How to load a model.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Tokens a session can hold (the KV cache is allocated for them); default: the model's
    /// training context, capped at 8192.
    pub context_len: Option<u32>,
    /// Tokens per prefill step; default 128.
    pub max_batch: Option<u32>,
    /// Bytes of GPU memory the model may take; default: the adapter's budget (`GpuMemory`).
    pub memory_budget: Option<u64>,
    /// Stops the upload between tensors, with [`crate::model::ModelError::LoadCancelled`].
    pub cancel: CancelToken,
}

/// Load progress for a progress bar.
#[derive(Debug, Clone, Serialize)]
pub struct LoadProgress {
    /// 0 ..= 1.
    pub fraction: f32,
    pub stage: &'static str,
}

/// What the UI and `doppler models` show about a loaded model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub architecture: String,
    pub quantization: String,
    pub file_size: u64,
    pub weight_bytes: u64,
    pub context_len: u32,
    pub n_layers: u32,
    pub vocab_size: u32,
    /// GPU memory of the weights and of one session, as estimated before the upload.
    pub footprint: MemoryFootprint,
}

/// A model on the GPU with its tokenizer and chat template; sessions share its weights.
pub struct LoadedModel {
    pub(crate) ctx: Arc<GpuContext>,
    pub(crate) config: ModelConfig,
    pub(crate) weights: ModelWeights,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) template: ChatTemplate,
    pub(crate) info: ModelInfo,
    pub(crate) max_batch: u32,
}

/// Tokens per prefill step when a load asks for none (the app's loads) on an adapter that
/// runs the f16 tensor-core products (`half_products`): 512, llama.cpp's default micro-batch,
/// since those products take steps of 160 tokens or more (pp512 on an H200 about 2.5× the
/// speed of 128-token steps on Llama 8B); 128 elsewhere.
pub fn default_max_batch(half_products: bool) -> u32 {
    if half_products {
        512
    } else {
        128
    }
}

impl Engine {
    pub fn new(options: EngineOptions) -> Result<Engine, GenerateError> {
        Ok(Engine { ctx: GpuContext::new(&options.gpu)? })
    }

    pub fn gpu(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Reads, checks and uploads a GGUF model; nothing about the file is trusted.
    pub fn load_model(
        &self,
        path: &Path,
        options: LoadOptions,
        progress: &mut dyn FnMut(LoadProgress),
    ) -> Result<Arc<LoadedModel>, GenerateError> {
        progress(LoadProgress { fraction: 0.0, stage: "reading" });
        self.load_checked(ModelFile::open(path)?, options, progress)
    }

    /// Uploads a model file already read and checked (see [`ModelFile::open`], which needs no GPU).
    pub fn load_checked(
        &self,
        file: ModelFile,
        options: LoadOptions,
        progress: &mut dyn FnMut(LoadProgress),
    ) -> Result<Arc<LoadedModel>, GenerateError> {
        self.ctx.check_health()?;
        if options.cancel.is_cancelled() {
            return Err(crate::model::ModelError::LoadCancelled.into());
        }
        let context_len = file.context_len(options.context_len)?;
        let ModelFile { path, gguf, config, tokenizer, template } = file;
        let path = path.as_path();
        let default_batch = default_max_batch(crate::kernels::matmul_half::runs_on(&self.ctx.caps));
        let max_batch = options.max_batch.unwrap_or(default_batch).clamp(1, context_len);
        let name = model_name(&gguf, path)?;
        let quantization = quantization_label(&gguf);
        let footprint = self.check_fit(
            &gguf,
            &config,
            &name,
            &quantization,
            (context_len, max_batch),
            options.memory_budget,
        )?;
        let weights = ModelWeights::upload(&self.ctx, &gguf, &config, &options.cancel, &mut |fraction| {
            progress(LoadProgress { fraction, stage: "uploading weights" })
        })?;
        let info = ModelInfo {
            name,
            architecture: config.architecture.name().to_string(),
            quantization,
            file_size: gguf.file_size(),
            weight_bytes: weights.bytes,
            context_len,
            n_layers: config.n_layers,
            vocab_size: config.vocab_size,
            footprint,
        };
        progress(LoadProgress { fraction: 1.0, stage: "ready" });
        Ok(Arc::new(LoadedModel {
            ctx: self.ctx.clone(),
            config,
            weights,
            tokenizer,
            template,
            info,
            max_batch,
        }))
    }
}

impl Engine {
    /// The model's footprint in a session of `context_len` tokens, refused (before anything is
    /// allocated) where it exceeds the budget.
    fn check_fit(
        &self,
        gguf: &GgufFile,
        config: &ModelConfig,
        name: &str,
        quantization: &str,
        (context_len, max_batch): (u32, u32),
        budget: Option<u64>,
    ) -> Result<MemoryFootprint, GenerateError> {
        let caps = &self.ctx.caps;
        let shape = SessionShape {
            context_len,
            max_batch,
            kv_f16: caps.shader_f16,
            max_storage_binding: caps.max_storage_binding,
            half_products: crate::kernels::matmul_half::runs_on(caps),
        };
        let footprint = MemoryFootprint::estimate(gguf, config, &shape);
        let memory = self.ctx.memory();
        let Some(budget) = budget.or(memory.budget) else { return Ok(footprint) };
        if footprint.total() <= budget {
            return Ok(footprint);
        }
        Err(GenerateError::TooLarge(Box::new(ModelTooLarge {
            model: name.to_string(),
            adapter: self.ctx.adapter_info.name.clone(),
            tier: memory.tier.describe(),
            footprint,
            context_len,
            budget,
            advice: FitAdvice::for_budget(&footprint, gguf, config, &shape, budget, quantization),
        })))
    }
}

impl LoadedModel {
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn chat_template(&self) -> &ChatTemplate {
        &self.template
    }

    pub fn gpu(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    pub fn weights(&self) -> &ModelWeights {
        &self.weights
    }

    /// A conversation with its own KV cache, allocated now for the whole context.
    pub fn new_session(self: &Arc<Self>) -> Result<Session, GenerateError> {
        Session::new(self.clone())
    }
}

/// The file's `general.name`, else its file name.
fn model_name(gguf: &GgufFile, path: &Path) -> Result<String, GenerateError> {
    Ok(gguf.metadata().get_str("general.name")?.map(str::to_string).unwrap_or_else(|| {
        path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "model".to_string())
    }))
}

/// llama.cpp's file-type label (`Q4_K_M`…) where the file says, else the most common matrix type.
fn quantization_label(gguf: &GgufFile) -> String {
    if let Some(label) = gguf.file_type_label() {
        return label;
    }
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for tensor in gguf.tensors().iter().filter(|t| t.dims.len() == 2) {
        match counts.iter_mut().find(|(name, _)| *name == tensor.ggml_type.name()) {
            Some((_, count)) => *count += 1,
            None => counts.push((tensor.ggml_type.name(), 1)),
        }
    }
    counts.into_iter().max_by_key(|(_, count)| *count).map(|(name, _)| name.to_string()).unwrap_or_default()
}
