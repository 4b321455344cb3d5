//! Qwen 2 and 2.5: Llama's pre-norm layer with biases on the q, k and v projections and NEOX
//! RoPE (llama.cpp's converter leaves Qwen's Q/K rows unpermuted, so the rotation pairs
//! (i, i + rot_dim/2) as in transformers). The LM head is tied in the small sizes.

use super::{ArchitectureSpec, LayerLayout};

pub struct Qwen2;

impl ArchitectureSpec for Qwen2 {
    fn name(&self) -> &'static str {
        "qwen2"
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout { qkv_bias: true, ..LayerLayout::PLAIN }
    }
}
