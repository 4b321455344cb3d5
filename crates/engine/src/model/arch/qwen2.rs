//! Qwen 2 and 2.5: Llama's pre-norm layer with biases on the q, k and v projections and NEOX
//! RoPE (llama.cpp's converter leaves Qwen's Q/K rows unpermuted, so the rotation pairs
//! (i, i + rot_dim/2) as in transformers). The LM head is tied in the small sizes.

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

pub struct Qwen2;

impl ArchitectureSpec for Qwen2 {
    fn name(&self) -> &'static str {
        "qwen2"
    }

    fn configure(&self, _reader: &ConfigReader, _config: &mut ModelConfig) -> Result<(), ModelError> {
        Ok(())
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout { qkv_bias: true, ..LayerLayout::PLAIN }
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
