//! Gemma 3 layer: RMSNorm before and after both the attention and the feed-forward block,
//! per-head RMSNorm of q and k, NEOX RoPE (base 10,000 on sliding-window layers, the file's
//! base on global ones), attention scaled by 1/sqrt(head_dim), and a GELU-tanh gated FFN.
//! GGUF norm weights already include Gemma's +1.

use super::{
    forward::{LayerContext, LayerEnds},
    LayerWeights,
};
use crate::{
    gpu::OpList,
    kernels::{
        attention::KvCache,
        elementwise::Activation,
        fused_qk::{QkNorms, QkStep},
        rope::{RopeStyle, RopeTable},
        KernelError,
    },
};

/// Records one layer; `acts.normed` holds the attention pre-norm of `acts.hidden` on entry,
/// and holds `next_norm` of the updated hidden state on exit.
pub(super) fn record_layer<'a>(
    lc: &LayerContext<'a>,
    ops: &mut OpList,
    index: u32,
    w: &'a LayerWeights,
    cache: &KvCache,
    rope: &RopeTable,
    next_norm: &'a wgpu::Buffer,
) -> Result<(), KernelError> {
    let (config, acts) = (lc.config, lc.acts);
    let gemma = w.gemma.as_ref().expect("Gemma 3 layers carry their extra norms");
    let name = |what: &str| format!("blk.{index}.{what}");

    lc.projections(ops, &w.qkv, &[&acts.q, &acts.k, &acts.v])?;
    let norms = QkNorms { q: &gemma.q_norm, k: &gemma.k_norm, eps: config.rms_eps };
    let qk = QkStep { rows: lc.qkv_rows(), norms: Some(norms), table: rope, style: RopeStyle::Neox };
    let window = if config.is_sliding_layer(index) { config.sliding_window } else { 0 };
    lc.attention(ops, &name("qk_norm_rope_store"), &name("attention"), &qk, cache, window)?;
    lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
    lc.residual_norm(
        ops,
        &name("post_attention_norm+ffn_norm"),
        LayerEnds { post_norm: Some(&gemma.post_attention_norm), next_norm: &w.ffn_norm },
    )?;

    lc.gated_ffn_input(ops, &name("ffn_gelu"), &w.gate_up, Activation::GeluTanh)?;
    lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
    lc.residual_norm(
        ops,
        &name("post_ffw_norm+next_norm"),
        LayerEnds { post_norm: Some(&gemma.post_ffn_norm), next_norm },
    )
}
