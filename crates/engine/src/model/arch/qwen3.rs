//! Qwen 3 (dense): Llama's pre-norm layer with a per-head RMSNorm of q and k before NEOX RoPE
//! and no biases. GGUF stores the q/k norm weights as the multipliers themselves (Qwen has no
//! +1 convention), so they go to the same kernel as Gemma 3's.

use super::{llama::record_pre_norm_layer, ArchitectureSpec, LayerContext, LayerLayout};
use crate::{
    gpu::OpList,
    kernels::{
        attention::KvCache,
        rope::{RopeStyle, RopeTable},
        KernelError,
    },
    model::{ConfigReader, LayerWeights, ModelConfig, ModelError},
};

pub struct Qwen3;

impl ArchitectureSpec for Qwen3 {
    fn name(&self) -> &'static str {
        "qwen3"
    }

    fn configure(&self, _reader: &ConfigReader, _config: &mut ModelConfig) -> Result<(), ModelError> {
        Ok(())
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout { qk_norm: true, ..LayerLayout::PLAIN }
    }

    fn record_layer<'a>(
        &self,
        lc: &LayerContext<'a>,
        ops: &mut OpList,
        index: u32,
        w: &'a LayerWeights,
        cache: &KvCache,
        rope: &RopeTable,
        next_norm: &'a wgpu::Buffer,
    ) -> Result<(), KernelError> {
        record_pre_norm_layer(lc, ops, index, w, cache, rope, next_norm, RopeStyle::Neox)
    }
}
