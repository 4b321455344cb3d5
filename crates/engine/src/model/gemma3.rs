//! Gemma 3 layer: RMSNorm before and after both the attention and the feed-forward block,
//! per-head RMSNorm of q and k, NEOX RoPE (base 10,000 on sliding-window layers, the file's
//! base on global ones), attention scaled by 1/sqrt(head_dim), and a GELU-tanh gated FFN.
//! GGUF norm weights already include Gemma's +1.

use super::{forward::LayerContext, LayerWeights};
use crate::{
    gpu::OpList,
    kernels::{
        attention::{record_attention, record_kv_store, KvCache},
        elementwise::{record_gated_activation, Activation},
        norm::NormOutput,
        rope::{record_rope, RopeStyle, RopeTable},
        KernelError,
    },
};

pub(super) fn record_layer(lc: &LayerContext, ops: &mut OpList, index: u32, w: &LayerWeights, cache: &KvCache, rope: &RopeTable) -> Result<(), KernelError> {
    let (ctx, config, acts) = (lc.ctx, lc.config, lc.acts);
    let gemma = w.gemma.as_ref().expect("Gemma 3 layers carry their extra norms");
    let name = |what: &str| format!("blk.{index}.{what}");

    lc.rms_norm(ops, &name("attn_norm"), &acts.hidden, &w.attn_norm, NormOutput::To(&acts.normed), config.hidden, 1)?;
    lc.linear(ops, &name("attn_q"), &w.q, &acts.normed, &acts.q)?;
    lc.linear(ops, &name("attn_k"), &w.k, &acts.normed, &acts.k)?;
    lc.linear(ops, &name("attn_v"), &w.v, &acts.normed, &acts.v)?;
    lc.rms_norm(ops, &name("attn_q_norm"), &acts.q, &gemma.q_norm, NormOutput::InPlace, config.head_dim, config.n_heads)?;
    lc.rms_norm(ops, &name("attn_k_norm"), &acts.k, &gemma.k_norm, NormOutput::InPlace, config.head_dim, config.n_kv_heads)?;
    record_rope(ctx, ops, &name("rope_q"), &acts.q, rope, &acts.step, RopeStyle::Neox, config.n_heads, config.head_dim)?;
    record_rope(ctx, ops, &name("rope_k"), &acts.k, rope, &acts.step, RopeStyle::Neox, config.n_kv_heads, config.head_dim)?;
    record_kv_store(ctx, ops, &name("kv_store"), cache, &acts.k, &acts.v, &acts.step)?;
    let window = if config.is_sliding_layer(index) { config.sliding_window } else { 0 };
    let scale = 1.0 / (config.head_dim as f32).sqrt();
    record_attention(ctx, ops, &name("attention"), cache, &acts.q, &acts.attention, &acts.step, config.n_heads, window, scale)?;
    lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
    lc.rms_norm(ops, &name("post_attention_norm"), &acts.projection, &gemma.post_attention_norm, NormOutput::AddTo(&acts.hidden), config.hidden, 1)?;

    lc.rms_norm(ops, &name("ffn_norm"), &acts.hidden, &w.ffn_norm, NormOutput::To(&acts.normed), config.hidden, 1)?;
    lc.linear(ops, &name("ffn_gate"), &w.gate, &acts.normed, &acts.gate)?;
    lc.linear(ops, &name("ffn_up"), &w.up, &acts.normed, &acts.up)?;
    record_gated_activation(ctx, ops, &name("ffn_gelu"), &acts.gate, &acts.up, &acts.step, config.ffn_hidden, Activation::GeluTanh)?;
    lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
    lc.rms_norm(ops, &name("post_ffw_norm"), &acts.projection, &gemma.post_ffn_norm, NormOutput::AddTo(&acts.hidden), config.hidden, 1)
}
