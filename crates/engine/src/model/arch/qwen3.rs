//! Qwen 3 (dense): Llama's pre-norm layer with a per-head RMSNorm of q and k before NEOX RoPE
//! and no biases. GGUF stores the q/k norm weights as the multipliers themselves (Qwen has no
//! +1 convention), so they go to the same kernel as Gemma 3's.

use super::{ArchitectureSpec, LayerLayout};

pub struct Qwen3;

impl ArchitectureSpec for Qwen3 {
    fn name(&self) -> &'static str {
        "qwen3"
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout { qk_norm: true, ..LayerLayout::PLAIN }
    }
}
