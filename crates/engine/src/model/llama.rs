//! Llama-family layer (Llama 2/3.x, SmolLM2): pre-norm attention with grouped-query heads and
//! interleaved RoPE (GGUF stores Q/K permuted for it), then a SiLU-gated feed-forward block.

use super::{
    forward::{LayerContext, LayerEnds},
    LayerWeights,
};
use crate::{
    gpu::OpList,
    kernels::{
        attention::KvCache,
        elementwise::Activation,
        fused_qk::{record_qk_rope_store, QkvRows},
        rope::{RopeStyle, RopeTable},
        KernelError,
    },
};

/// Records one layer; `acts.normed` holds the attention pre-norm of `acts.hidden` on entry,
/// and holds `next_norm` of the updated hidden state on exit.
pub(super) fn record_layer<'a>(lc: &LayerContext<'a>, ops: &mut OpList, index: u32, w: &'a LayerWeights, cache: &KvCache, rope: &RopeTable, next_norm: &'a wgpu::Buffer) -> Result<(), KernelError> {
    let (ctx, config, acts) = (lc.ctx, lc.config, lc.acts);
    let name = |what: &str| format!("blk.{index}.{what}");

    lc.projections(ops, &w.qkv, &[&acts.q, &acts.k, &acts.v])?;
    let rows = QkvRows { q: &acts.q, k: &acts.k, v: &acts.v };
    record_qk_rope_store(ctx, ops, &name("rope_store"), rows, None, rope, RopeStyle::Interleaved, cache, &acts.step, config.n_heads)?;
    lc.attention(ops, &name("attention"), cache, 0)?;
    lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
    lc.residual_norm(ops, &name("attn_residual+ffn_norm"), LayerEnds { post_norm: None, next_norm: &w.ffn_norm })?;

    lc.gated_ffn_input(ops, &name("ffn_silu"), &w.gate_up, Activation::Silu)?;
    lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
    lc.residual_norm(ops, &name("ffn_residual+next_norm"), LayerEnds { post_norm: None, next_norm })
}
