//! Llama-family layer (Llama 2/3.x, SmolLM2): pre-norm attention with grouped-query heads and
//! interleaved RoPE (GGUF stores Q/K permuted for it), then a SiLU-gated feed-forward block.

use super::{forward::LayerContext, LayerWeights};
use crate::{
    gpu::OpList,
    kernels::{
        attention::{record_attention, record_kv_store, KvCache},
        elementwise::{record_add, record_gated_activation, Activation},
        norm::NormOutput,
        rope::{record_rope, RopeStyle, RopeTable},
        KernelError,
    },
};

pub(super) fn record_layer(lc: &LayerContext, ops: &mut OpList, index: u32, w: &LayerWeights, cache: &KvCache, rope: &RopeTable) -> Result<(), KernelError> {
    let (ctx, config, acts) = (lc.ctx, lc.config, lc.acts);
    let name = |what: &str| format!("blk.{index}.{what}");

    lc.rms_norm(ops, &name("attn_norm"), &acts.hidden, &w.attn_norm, NormOutput::To(&acts.normed), config.hidden, 1)?;
    lc.linear(ops, &name("attn_q"), &w.q, &acts.normed, &acts.q)?;
    lc.linear(ops, &name("attn_k"), &w.k, &acts.normed, &acts.k)?;
    lc.linear(ops, &name("attn_v"), &w.v, &acts.normed, &acts.v)?;
    record_rope(ctx, ops, &name("rope_q"), &acts.q, rope, &acts.step, RopeStyle::Interleaved, config.n_heads, config.head_dim)?;
    record_rope(ctx, ops, &name("rope_k"), &acts.k, rope, &acts.step, RopeStyle::Interleaved, config.n_kv_heads, config.head_dim)?;
    record_kv_store(ctx, ops, &name("kv_store"), cache, &acts.k, &acts.v, &acts.step)?;
    let scale = 1.0 / (config.head_dim as f32).sqrt();
    record_attention(ctx, ops, &name("attention"), cache, &acts.q, &acts.attention, &acts.step, config.n_heads, 0, scale)?;
    lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
    record_add(ctx, ops, &name("attn_residual"), &acts.hidden, &acts.projection, &acts.step, config.hidden)?;

    lc.rms_norm(ops, &name("ffn_norm"), &acts.hidden, &w.ffn_norm, NormOutput::To(&acts.normed), config.hidden, 1)?;
    lc.linear(ops, &name("ffn_gate"), &w.gate, &acts.normed, &acts.gate)?;
    lc.linear(ops, &name("ffn_up"), &w.up, &acts.normed, &acts.up)?;
    record_gated_activation(ctx, ops, &name("ffn_silu"), &acts.gate, &acts.up, &acts.step, config.ffn_hidden, Activation::Silu)?;
    lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
    record_add(ctx, ops, &name("ffn_residual"), &acts.hidden, &acts.projection, &acts.step, config.hidden)
}
