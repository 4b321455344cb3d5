//! Gemma 3 (270M, 1B, 4B, 12B, 27B): RMSNorm before and after both the attention and the
//! feed-forward block, per-head RMSNorm of q and k, NEOX RoPE (base 10,000 unscaled on
//! sliding-window layers, the file's base and linear scaling on every sixth, global, layer),
//! embeddings scaled by sqrt(hidden), and a GELU-tanh gated FFN. GGUF norm weights already
//! include Gemma's +1.
//!
//! Queries are scaled by 1/sqrt(query_pre_attn_scalar), which is the head dimension in every
//! size but 27B, where it is hidden/heads = 168 (head_dim 128). GGUF has no key for it, so
//! 27B is recognised by its 62 layers, as llama.cpp does.

use super::{ArchitectureSpec, LayerContext, LayerEnds, LayerInputs, LayerLayout, Storage};
use crate::{
    gpu::OpList,
    kernels::{
        elementwise::Activation,
        fused_qk::{QkNorms, QkStep},
        rope::{RopeFrequencies, RopeStyle},
        KernelError,
    },
    model::{ConfigReader, ModelConfig, ModelError},
};

pub struct Gemma3;

/// Gemma 3's layers: five sliding-window layers, then one global.
const SLIDING_WINDOW_PATTERN: u32 = 6;
const LAYERS_OF_27B: u32 = 62;

impl ArchitectureSpec for Gemma3 {
    fn name(&self) -> &'static str {
        "gemma3"
    }

    fn configure(&self, reader: &ConfigReader, config: &mut ModelConfig) -> Result<(), ModelError> {
        if reader.f32("rope.freq_base")?.is_none() {
            config.rope.theta_base = 1_000_000.0;
        }
        config.rope_local = Some(RopeFrequencies::plain(10_000.0));
        config.sliding_window = reader.u32("attention.sliding_window")?.unwrap_or(0);
        config.sliding_window_pattern = SLIDING_WINDOW_PATTERN;
        if config.n_layers == LAYERS_OF_27B {
            config.attention_scale = 1.0 / (config.hidden as f32 / config.n_heads as f32).sqrt();
        }
        Ok(())
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout {
            qkv: Storage::Separate,
            gate_up: Storage::Separate,
            qkv_bias: false,
            qk_norm: true,
            post_norms: true,
        }
    }

    fn embedding_scale(&self, config: &ModelConfig) -> f32 {
        (config.hidden as f32).sqrt()
    }

    fn record_layer<'a>(
        &self,
        lc: &LayerContext<'a>,
        ops: &mut OpList,
        layer: &LayerInputs<'a>,
    ) -> Result<(), KernelError> {
        let LayerInputs { index, weights: w, cache, rope, next_norm } = *layer;
        let (config, acts) = (lc.config, lc.acts);
        let (Some(qk_norms), Some(post_norms)) = (&w.qk_norms, &w.post_norms) else {
            return Err(KernelError::InvalidShape {
                kernel: "gemma3 layer",
                message: "a Gemma 3 layer needs its q/k norms and post-norms".into(),
            });
        };
        let name = |what: &str| format!("blk.{index}.{what}");

        lc.projections(ops, &w.qkv, &[&acts.q, &acts.k, &acts.v])?;
        let norms = QkNorms { q: &qk_norms.q, k: &qk_norms.k, eps: config.rms_eps };
        let qk = QkStep {
            rows: lc.qkv_rows(),
            norms: Some(norms),
            table: rope,
            style: RopeStyle::Neox,
            bias: None,
        };
        let window = if config.is_sliding_layer(index) { config.sliding_window } else { 0 };
        lc.attention(ops, &name("qk_norm_rope_store"), &name("attention"), &qk, cache, window)?;
        lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
        lc.residual_norm(
            ops,
            &name("post_attention_norm+ffn_norm"),
            LayerEnds { post_norm: Some(&post_norms.attention), next_norm: &w.ffn_norm },
        )?;

        lc.gated_ffn_input(ops, &name("ffn_gelu"), &w.gate_up, Activation::GeluTanh)?;
        lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
        lc.residual_norm(
            ops,
            &name("post_ffw_norm+next_norm"),
            LayerEnds { post_norm: Some(&post_norms.ffn), next_norm },
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::gguf::GgufFile;

    #[test]
    fn only_27b_scales_queries_by_hidden_over_heads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/gemma3/model.gguf");
        let gguf = GgufFile::open(&path).unwrap();
        let mut config = ModelConfig::from_gguf(&gguf).unwrap();
        assert_ne!(config.n_heads * config.head_dim, config.hidden, "the fixture tells the two scales apart");
        assert_eq!(config.attention_scale, 1.0 / (config.head_dim as f32).sqrt());

        config.n_layers = LAYERS_OF_27B;
        Gemma3.configure(&ConfigReader { gguf: &gguf, arch: "gemma3" }, &mut config).unwrap();
        assert_eq!(config.attention_scale, 1.0 / (config.hidden as f32 / config.n_heads as f32).sqrt());
    }
}
